"""Deployments: parties of a protocol as separate processes over mutually authenticated TCP.

certs
    A development CA and one certificate per party.
deployment
    The deployment file (TOML): protocol, parameters, and each party's address,
    certificate, key and local data file, validated with pydantic.
vertical, mpc, p2b
    Each protocol's parties as processes (``run_party``), its synthetic data files and the
    in-memory run it must equal (``run_in_memory``).
files, party, local, checkpoint
    One party in this process (exit codes, abort naming the lost peer); every party on
    127.0.0.1; atomic checkpoints for ``--resume``.
cli
    The ``deploy`` and ``party`` command groups (imported lazily by the main CLI).
"""
