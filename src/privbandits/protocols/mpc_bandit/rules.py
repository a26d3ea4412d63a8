"""The rules that tie the private ε-greedy learner's options together (:class:`~privbandits.protocols.mpc_bandit.
MPCBanditConfig`): each says why a combination cannot run, or None. The protocol's config, the experiment config
and the deployment file check the same rules (re-exported by :mod:`privbandits.protocols.mpc_bandit`).
"""

from __future__ import annotations


def overlap_problem(overlap: bool, n_parties: int, truncation: str) -> str | None:
    """Why ``overlap_reciprocal`` cannot be set with these parties and truncation (None: it can)."""
    if overlap and (n_parties != 2 or truncation not in ("auto", "local")):
        return (
            f"overlap_reciprocal needs local truncation (2 computing parties, truncation 'auto' or 'local'); "
            f"got {n_parties} parties with truncation {truncation!r}"
        )
    return None


def mask_factors_problem(mask_factors: bool, overlap: bool, mask_encoding: str = "integer") -> str | None:
    """Why ``mask_factors`` cannot be set with these options (None: it can)."""
    if mask_factors and not overlap:
        return "mask_factors needs overlap_reciprocal = True (its products ride on the argmax's openings), got False"
    if mask_factors and mask_encoding != "integer":
        return f"mask_factors needs mask_encoding 'integer' (o masks the factors exactly), got {mask_encoding!r}"
    return None


def lookup_comparison_problem(
    lookup_comparison: bool, n_parties: int, allmax_lookup: bool, n_arms: int | None = None
) -> str | None:
    """Why ``lookup_comparison`` cannot be set with these options (None: it can; ``n_arms`` None: not known yet)."""
    if lookup_comparison and n_parties != 2:
        return f"lookup_comparison is for 2 computing parties (its tables split each share), got {n_parties}"
    if lookup_comparison and not allmax_lookup:
        return "lookup_comparison needs allmax_lookup = True (its comparisons are counted modulo 16), got False"
    if lookup_comparison and n_arms is not None and n_arms > 256:
        return f"lookup_comparison counts an arm's wins in a byte, so it takes at most 256 arms, got n_arms = {n_arms}"
    return None


def dealt_exploration_problem(dealt_exploration: bool, allmax_lookup: bool) -> str | None:
    """Why ``dealt_exploration`` cannot be set with these options (None: it can)."""
    if dealt_exploration and not allmax_lookup:
        return "dealt_exploration needs allmax_lookup = True (1 − y_t rides on the argmax's last lookup), got False"
    return None
