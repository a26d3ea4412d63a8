"""Bandit problems: the papers' synthetic generators, classification→bandit, logged-data replay."""

from privbandits.envs.base import BanditRound, ContextKind, Environment
from privbandits.envs.classification import ClassificationBandit, ExampleOrder
from privbandits.envs.replay import ReplayOrder, ReplayResult, check_uniform_logging, relative_ctr, replay
from privbandits.envs.synthetic import LinearGaussianBandit, normalised_gaussian

__all__ = [
    "BanditRound",
    "ClassificationBandit",
    "ContextKind",
    "Environment",
    "ExampleOrder",
    "LinearGaussianBandit",
    "ReplayOrder",
    "ReplayResult",
    "check_uniform_logging",
    "normalised_gaussian",
    "relative_ctr",
    "replay",
]
