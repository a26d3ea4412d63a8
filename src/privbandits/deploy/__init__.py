"""Deployments: parties of a protocol as separate processes over mutually authenticated TCP.

certs
    A development CA and one certificate bundle per party.
deployment, deployment_parts, deployment_p2b
    The deployment file (TOML): protocol, parameters, and each party's address,
    certificate, key and local data file, validated with pydantic; what every protocol
    section builds on; P2B's section.
registry
    Deployable protocols as plug-ins: the interface of a protocol's party code
    (:class:`~privbandits.deploy.registry.DeployableProtocol`) and the registry the parser, the party
    runner and the CLI look protocols up in (:data:`~privbandits.deploy.registry.PROTOCOLS`).
entropy
    Where a deployed party's randomness comes from: OS entropy, or the file's seed when asked.
vertical, mpc, p2b, fclub
    Each protocol's parties as processes (``run_party``), its synthetic data files and the
    in-memory run it must equal (``run_in_memory``); its ``DEPLOYABLE``, what the registry runs.
p2b_parties, p2b_messages
    P2B's deployed parties (the protocol's, through its extension points) and the messages they add.
p2b_data, p2b_front, p2b_outcome, p2b_rejoin, p2b_load
    P2B's data files; the shuffler's device front end; the outcome from the result files and
    the in-memory run; restarting one party while the others run; a load generator.
fclub_users, fclub_local, fclub_global, fclub_resume
    FCLUB's users party, local servers and global server, and their checkpoints.
files, party, local, zygote, hosts
    A party's data file; one party in this process (exit codes, abort naming the lost peer);
    every party on 127.0.0.1, forked from one process that imported the party code once;
    separate hosts as network namespaces on one Linux machine.
checkpoint, snapshot
    Atomic checkpoints at round boundaries for ``--resume``; a party's whole state as named
    arrays and a JSON tree, without pickle.
console, attacks
    What an operator sees of a deployment; attacks on it by one of its own parties.
cli
    The ``deploy`` and ``party`` command groups (imported lazily by the main CLI).
"""
