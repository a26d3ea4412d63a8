"""P2B: privacy-preserving on-device bandits through encode–shuffle–analyze (spec ``p2b.md``).

Modules: :mod:`.core` (the parties, their messages and :func:`~.core.simulate`, the in-memory run), :mod:`.config`
(:class:`~.config.P2BConfig`, the options, and :class:`~.config.Representation`) and :mod:`.queue` (the shuffler's
durable report queue: SQLite, PostgreSQL). The names load lazily, so ``privbandits.protocols.p2b.config`` imports
no party code.
"""

from __future__ import annotations

from privbandits._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "CloseBatch": "privbandits.protocols.p2b.core",
        "DEVICES": "privbandits.protocols.p2b.core",
        "DeviceHost": "privbandits.protocols.p2b.core",
        "EncodedBatch": "privbandits.protocols.p2b.core",
        "EncodedReport": "privbandits.protocols.p2b.core",
        "ModelRelease": "privbandits.protocols.p2b.core",
        "NewAgents": "privbandits.protocols.p2b.core",
        "P2BConfig": "privbandits.protocols.p2b.config",
        "P2BOutcome": "privbandits.protocols.p2b.core",
        "PRIVACY_UNIT": "privbandits.protocols.p2b.core",
        "RAW_BASELINE": "privbandits.protocols.p2b.core",
        "RAW_DEVICES": "privbandits.protocols.p2b.core",
        "RawBatch": "privbandits.protocols.p2b.core",
        "RawReport": "privbandits.protocols.p2b.core",
        "Representation": "privbandits.protocols.p2b.config",
        "SERVER_ENCODED": "privbandits.protocols.p2b.core",
        "SERVER_RAW": "privbandits.protocols.p2b.core",
        "SHUFFLED": "privbandits.protocols.p2b.core",
        "Server": "privbandits.protocols.p2b.core",
        "SettingResult": "privbandits.protocols.p2b.core",
        "Shuffler": "privbandits.protocols.p2b.core",
        "choose_reports": "privbandits.protocols.p2b.core",
        "compose_ledgers": "privbandits.protocols.p2b.core",
        "private_inputs": "privbandits.protocols.p2b.core",
        "simulate": "privbandits.protocols.p2b.core",
    },
)
