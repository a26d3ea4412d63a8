"""Deployments: parties of a protocol as separate processes over mutually authenticated TCP.

The generic machinery, one module each:

certs
    A development CA and one certificate bundle per party.
deployment, deployment_parts
    The deployment file (TOML): protocol, parameters, and each party's address, certificate, key and local data
    file, validated with pydantic; what every protocol section builds on.
registry
    Deployable protocols as plug-ins: the interface of a protocol's party code
    (:class:`~privbandits.deploy.registry.DeployableProtocol`) and the registry the parser, the party runner and the
    CLI look protocols up in (:data:`~privbandits.deploy.registry.PROTOCOLS`).
entropy
    Where a deployed party's randomness comes from: OS entropy, or the file's seed when asked.
files, party, local, zygote, hosts
    A party's data file; one party in this process (exit codes, abort naming the lost peer); every party on
    127.0.0.1, forked from one process that imported the party code once; separate hosts as network namespaces on
    one Linux machine.
checkpoint, snapshot
    Atomic checkpoints at round boundaries for ``--resume``; a party's whole state as named arrays and a JSON tree,
    without pickle.
console
    What an operator sees of a deployment.
cli
    The ``deploy`` and ``party`` command groups (imported lazily by the main CLI).

One package per built-in protocol, shaped like any plug-in protocol: its ``SECTION`` (the
deployment file's ``[protocol]`` section, in ``section``) and its ``PARTY_CODE`` (each party's code, its synthetic
data and the in-memory run it must equal):

vertical, mpc_bandit, p2b, fclub
    Vertical O3M, the MPC ε-greedy bandit, P2B and FCLUB as separate party processes.
"""
