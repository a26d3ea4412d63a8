"""Plaintext linear contextual bandits: the non-private references of every protocol."""

from __future__ import annotations

from privbandits._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "EpsilonGreedy": "privbandits.linear.policies",
        "Layout": "privbandits.linear.policies",
        "LinearBandit": "privbandits.linear.policies",
        "LinTS": "privbandits.linear.policies",
        "LinUCB": "privbandits.linear.policies",
        "Policy": "privbandits.linear.policies",
        "Sampler": "privbandits.linear.policies",
        "UniformRandom": "privbandits.linear.policies",
        "as_generator": "privbandits.linear.policies",
        "covariance_root": "privbandits.linear.policies",
        "RidgeStatistics": "privbandits.linear.ridge",
        "TieBreak": "privbandits.linear.tiebreak",
        "break_ties": "privbandits.linear.tiebreak",
        "tied_arms": "privbandits.linear.tiebreak",
    },
)
