"""Plaintext linear contextual bandits: the non-private references of every protocol."""

from privbandits.linear.policies import (
    EpsilonGreedy,
    Layout,
    LinearBandit,
    LinTS,
    LinUCB,
    Policy,
    Sampler,
    UniformRandom,
    as_generator,
    covariance_root,
)
from privbandits.linear.ridge import RidgeStatistics
from privbandits.linear.tiebreak import TieBreak, break_ties, tied_arms

__all__ = [
    "EpsilonGreedy",
    "Layout",
    "LinTS",
    "LinUCB",
    "LinearBandit",
    "Policy",
    "RidgeStatistics",
    "Sampler",
    "TieBreak",
    "UniformRandom",
    "as_generator",
    "break_ties",
    "covariance_root",
    "tied_arms",
]
