"""Bandit problems: the papers' synthetic generators and classification→bandit."""

from privbandits.envs.base import BanditRound, ContextKind, Environment
from privbandits.envs.classification import ClassificationBandit, ExampleOrder
from privbandits.envs.synthetic import LinearGaussianBandit, normalised_gaussian

__all__ = [
    "BanditRound",
    "ClassificationBandit",
    "ContextKind",
    "Environment",
    "ExampleOrder",
    "LinearGaussianBandit",
    "normalised_gaussian",
]
