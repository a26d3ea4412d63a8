"""Bandit problems: the papers' synthetic generators, classification→bandit, logged-data replay."""

from __future__ import annotations

from privbandits._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "BanditRound": "privbandits.envs.base",
        "ContextKind": "privbandits.envs.base",
        "Environment": "privbandits.envs.base",
        "ClassificationBandit": "privbandits.envs.classification",
        "ExampleOrder": "privbandits.envs.classification",
        "ReplayOrder": "privbandits.envs.logged_replay",
        "ReplayResult": "privbandits.envs.logged_replay",
        "check_uniform_logging": "privbandits.envs.logged_replay",
        "relative_ctr": "privbandits.envs.logged_replay",
        "replay": "privbandits.envs.logged_replay",
        "LinearGaussianBandit": "privbandits.envs.synthetic",
        "normalised_gaussian": "privbandits.envs.synthetic",
    },
)
