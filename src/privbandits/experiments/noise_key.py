"""Which run specs name the DP noise sampler: those whose numbers depend on it.

Changing :mod:`~privbandits.privacy.noise` changes every draw of a run that adds DP noise
(at the same seed), and nothing else. So a run spec holds ``noise_sampler`` exactly when
its policy adds DP noise; runs without noise keep the keys they were stored under.
"""

from __future__ import annotations

import math
from typing import Any

_DP_LINUCB_KINDS = frozenset({"joint_dp_linucb", "local_dp_linucb", "shuffle_dp_linucb"})

FCLUB_UPLOADS = {"fclub_uploads": "snapped"}
"""In the key of a private FCLUB run: its uploads are snapped to the noise grid (since issue 31; the numbers
moved slightly at the same seeds, so runs stored before are not reused)."""


def adds_dp_noise(policy: Any) -> bool:
    """Whether a policy config's runs draw DP noise (a DP LinUCB at finite ε, a private FCLUB variant)."""
    kind = getattr(policy, "kind", None)
    if kind in _DP_LINUCB_KINDS:
        return math.isfinite(policy.epsilon)
    if kind == "fclub":
        return policy.private if policy.private is not None else policy.variant == "cdp-fclub-dc"
    return False


def noise_key(policy: Any) -> dict[str, str]:
    """``{"noise_sampler": name}`` for a policy that draws DP noise, else ``{}`` (merged into its run spec)."""
    if not adds_dp_noise(policy):
        return {}
    from privbandits.privacy.noise import NOISE_SAMPLER  # numpy: not on the command line's import path

    return {"noise_sampler": NOISE_SAMPLER, **(FCLUB_UPLOADS if policy.kind == "fclub" else {})}
