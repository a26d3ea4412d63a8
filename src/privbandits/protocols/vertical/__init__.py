"""Vertical federated LinUCB / LinTS with orthogonal masks (O3M): VFUCB and VFTS (spec ``vertical-o3m.md``).

Modules: :mod:`.core` (the mask generator, the active and passive parties, their messages and
:class:`~.core.VerticalFederatedBandit`, the in-memory run). The names load lazily.
"""

from __future__ import annotations

from privbandits._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "ActiveParty": "privbandits.protocols.vertical.core",
        "AggregationShare": "privbandits.protocols.vertical.core",
        "AggregationShareChunk": "privbandits.protocols.vertical.core",
        "FRACTION_BITS": "privbandits.protocols.vertical.core",
        "MaskBlock": "privbandits.protocols.vertical.core",
        "MaskGenerator": "privbandits.protocols.vertical.core",
        "MaskedContexts": "privbandits.protocols.vertical.core",
        "MaskedContextsChunk": "privbandits.protocols.vertical.core",
        "PairSeed": "privbandits.protocols.vertical.core",
        "PassiveParty": "privbandits.protocols.vertical.core",
        "RoundRequest": "privbandits.protocols.vertical.core",
        "RoundRequests": "privbandits.protocols.vertical.core",
        "SingleFeaturePartyWarning": "privbandits.protocols.vertical.core",
        "VerticalFederatedBandit": "privbandits.protocols.vertical.core",
        "check_aggregable": "privbandits.protocols.vertical.core",
        "from_fixed_point": "privbandits.protocols.vertical.core",
        "to_fixed_point": "privbandits.protocols.vertical.core",
    },
)
