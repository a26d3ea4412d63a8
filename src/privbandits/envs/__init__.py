"""Bandit problems: the papers' synthetic generators, classification→bandit, logged-data replay.

base
    The interface every bandit problem implements (:class:`Environment`, :class:`BanditRound`).
synthetic, clustered, p2b_synthetic, kmeans_arms
    The synthetic settings of the vertical O3M, FCLUB and P2B papers, and the MPC paper's k-means arms.
classification
    Classification → bandit: arms are labels, reward 1 when the pulled arm is a true label.
logged_replay
    Offline evaluation of a policy by replaying a uniformly-random log.

The exports load lazily (PEP 562): ``import privbandits.envs`` imports none of its modules.
"""

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
