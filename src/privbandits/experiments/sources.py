"""Round sources: every environment of a config as one stream of :class:`Round` objects.

The runner's loop (:func:`privbandits.experiments.runner._run`) knows only this
contract: ``reset(rng)``, ``next_round() -> Round`` and ``feedback(arm) -> Feedback``.

* :class:`EnvironmentSource` wraps any :class:`~privbandits.envs.base.Environment`
  (synthetic, classification, k-means arms, clustered users): every round counts,
  and the expected rewards are known, so the runner measures pseudo-regret.
* :class:`ReplaySource` walks a uniformly-random log (Li et al. 2010; the loop of
  :func:`privbandits.envs.logged_replay.replay`): a round counts only when the chosen arm
  is the logged one, and the expected rewards are unknown.

Data sets are loaded once per process, keyed by the files' paths and content hashes.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from privbandits.experiments.tasks import file_identity


class Round(NamedTuple):
    """What one round offers a learner.

    ``contexts``: ``(n_arms, d)`` per-arm contexts or ``(d,)`` one context;
    ``expected``: every arm's expected reward (None when unknown, as under replay);
    ``user``: the user served (-1 when the environment has no users);
    ``logged_arm``: the arm the log holds (-1 when not replaying).
    """

    contexts: np.ndarray
    expected: np.ndarray | None
    user: int = -1
    logged_arm: int = -1


class Feedback(NamedTuple):
    """The reward of the chosen arm, and whether the round counts (replay: the arm was logged)."""

    reward: float
    counts: bool


class EnvironmentSource:
    """An :class:`~privbandits.envs.base.Environment` as a round source; every round counts.

    ``server_of_user`` is the local server of each user (environments with users).
    """

    def __init__(self, env, server_of_user: np.ndarray | None = None) -> None:
        self.env = env
        self.n_arms, self.dim = env.n_arms, env.dim
        self.server_of_user = server_of_user
        self._has_user = server_of_user is not None

    @property
    def n_users(self) -> int:
        return 0 if self.server_of_user is None else len(self.server_of_user)

    def reset(self, rng: np.random.Generator) -> None:
        self.env.reset(rng)

    def next_round(self) -> Round:
        contexts, expected = self.env.next_round()
        return Round(contexts, expected, self.env.user if self._has_user else -1)

    def feedback(self, arm: int) -> Feedback:
        return Feedback(self.env.reward(arm), True)

    def reward(self, arm: int) -> float:
        """The current round's reward of ``arm`` (for learners that pull inside their step)."""
        return self.env.reward(arm)


class ReplaySource:
    """Logged events as rounds, in a seeded permutation or the logged order (Li et al. 2011, Alg. 1).

    The log must come from a uniformly random policy (checked; ``allow_nonuniform``
    accepts a biased estimate with a warning).
    """

    def __init__(self, data, contexts, *, order: str = "shuffle", allow_nonuniform: bool = False) -> None:
        from privbandits.envs.logged_replay import check_uniform_logging

        if contexts.n_events != data.n_events or contexts.n_arms != data.n_items:
            raise ValueError(
                f"contexts cover {contexts.n_events} events × {contexts.n_arms} arms "
                f"but the log has {data.n_events} events × {data.n_items} items"
            )
        try:
            check_uniform_logging(data)
        except ValueError as error:
            if not allow_nonuniform:
                raise
            import warnings

            warnings.warn(f"replay estimate is biased: {error}", stacklevel=2)
        self.data, self.contexts, self.order = data, contexts, order
        self.n_arms, self.dim = data.n_items, contexts.dim
        self.server_of_user = None
        self.n_users = 0

    def reset(self, rng: np.random.Generator) -> None:
        n = self.data.n_events
        self._events = rng.permutation(n) if self.order == "shuffle" else np.arange(n)
        self._step = -1

    def next_round(self) -> Round:
        self._step += 1
        if self._step >= len(self._events):
            raise ValueError(f"the log has only {len(self._events)} events; lower the horizon")
        self._event = int(self._events[self._step])
        return Round(self.contexts(self._event), None, -1, int(self.data.actions[self._event]))

    def feedback(self, arm: int) -> Feedback:
        if not 0 <= arm < self.n_arms:
            raise ValueError(f"policy chose arm {arm}; arms are 0..{self.n_arms - 1}")
        if arm == self.data.actions[self._event]:
            return Feedback(float(self.data.rewards[self._event]), True)
        return Feedback(0.0, False)


# -- data, loaded once per process ------------------------------------------------------
def _sha(path: str | None) -> str:
    return "" if path is None else file_identity(path)["sha256"]


@lru_cache(maxsize=4)
def _obd(path: str, sha256: str, position: int | None, share: float, descriptor: tuple[str, ...]):
    from privbandits.datasets.obd import load_obd, vertical_obd_contexts

    data = load_obd(path, position=position, min_category_share=share)
    return data, vertical_obd_contexts(data, descriptor=descriptor)


def obd_log(config) -> tuple[Any, Any]:
    """(log, vertical per-arm contexts) of an ``obd_replay`` environment config."""
    return _obd(config.path, _sha(config.path), config.position, config.min_category_share, tuple(config.descriptor))


class UserContexts(NamedTuple):
    """The user's features as one context per logged event (disjoint per-arm models)."""

    users: np.ndarray
    n_arms: int

    @property
    def n_events(self) -> int:
        return self.users.shape[0]

    @property
    def partition(self) -> tuple[int, ...]:
        return (self.users.shape[1],)

    @property
    def dim(self) -> int:
        return self.users.shape[1]

    def __call__(self, event: int) -> np.ndarray:
        return self.users[event]


_NPZ_KEYS = ("user_features", "item_features", "actions", "rewards")


@lru_cache(maxsize=4)
def _npz(path: str, sha256: str, layout: str):
    from privbandits.datasets.logged import EventContexts, LoggedBanditData

    with np.load(path, allow_pickle=False) as stored:
        missing = [key for key in _NPZ_KEYS if key not in stored.files]
        if missing:
            raise ValueError(f"{path} has no array {missing[0]!r}; it needs {', '.join(_NPZ_KEYS)}")
        arrays = {key: stored[key] for key in stored.files if key in (*_NPZ_KEYS, "propensities", "positions")}
    users, items = np.asarray(arrays["user_features"]), np.asarray(arrays["item_features"])
    if users.ndim != 2 or items.ndim != 2:
        raise ValueError(f"user_features and item_features must be 2-D, got {users.shape} and {items.shape}")
    data = LoggedBanditData(
        user_features=users,
        item_features=items,
        actions=arrays["actions"],
        rewards=arrays["rewards"],
        propensities=arrays.get("propensities"),
        positions=arrays.get("positions"),
        user_feature_names=tuple(f"user{j}" for j in range(users.shape[1])),
        item_feature_names=tuple(f"item{j}" for j in range(items.shape[1])),
    )
    if layout == "per_round":
        return data, UserContexts(data.user_features, data.n_items)
    item_block, user_block = data.item_features, data.user_features
    n_arms = data.n_items

    def build(event: int) -> np.ndarray:
        interaction = (item_block[:, :, None] * user_block[event]).reshape(n_arms, -1)
        return np.concatenate((item_block, interaction), axis=1)

    d_i, d_u = item_block.shape[1], user_block.shape[1]
    names = (*data.item_feature_names, *(f"{i}*{u}" for i in data.item_feature_names for u in data.user_feature_names))
    return data, EventContexts(build, data.n_events, n_arms, (d_i, d_i * d_u), names)


def logged_npz(config) -> tuple[Any, Any]:
    """(log, contexts) of a ``logged_replay`` environment config."""
    return _npz(config.path, _sha(config.path), config.layout)


@lru_cache(maxsize=4)
def _mnist(path: str, sha256: str, components: int):
    from privbandits.datasets.mnist import load_mnist

    return load_mnist(path, components)


@lru_cache(maxsize=4)
def _mnist5k(path: str, sha256: str, components: int, held_out: float, split_seed: int):
    from privbandits.datasets.mnist5k import mnist5k_bandit

    return mnist5k_bandit(path, held_out=held_out, seed=split_seed, components=components)


@lru_cache(maxsize=4)
def _digits_split(components: int):
    from privbandits.datasets.mnist import digits_stand_in

    return digits_stand_in(components)


@lru_cache(maxsize=8)
def _digits(pca_components: int | None, unit_norm: bool):
    from privbandits.datasets.digits import load_digits_data

    return load_digits_data(pca_components, unit_norm)


@lru_cache(maxsize=4)
def _pool(source: str, path: str, sha256: str, dim: int, n_clusters: int) -> np.ndarray:
    from privbandits.datasets.movielens import load_interactions, preference_vectors

    if source == "movielens":
        return preference_vectors(load_interactions(path), dim, n_clusters).user_thetas
    vectors = np.load(path, allow_pickle=False)
    if vectors.ndim != 2 or vectors.shape[1] != dim:
        raise ValueError(f"{path} holds vectors of shape {vectors.shape}; the environment asks for dim={dim}")
    return vectors


@lru_cache(maxsize=4)
def _kmeans(data: str, path: str | None, sha256: str, components: int, n_arms: int, seed: int):
    from privbandits.envs.kmeans_arms import kmeans_centres

    split = _mnist(path, sha256, components) if data == "mnist" else _digits_split(components)
    features = split.train.features
    return features, kmeans_centres(features, n_arms, seed)


@lru_cache(maxsize=4)
def _multilabel(dataset: str, paths: tuple[str, ...] | None, shas: tuple[str, ...], location: str, seed: int,
                n_actions: int, dim: int):  # fmt: skip
    from privbandits.datasets.multilabel import DATASETS, load_arff, mediamill_rows, stand_in_data, tmc_rows

    if paths is None:
        data = stand_in_data(dataset, seed)
    else:
        data = load_arff(list(paths), DATASETS[dataset].n_labels, label_location=location)
    reduce = mediamill_rows if dataset == "mediamill" else tmc_rows
    return reduce(data, n_actions=n_actions, dim=dim)


def build_source(config) -> EnvironmentSource | ReplaySource:
    """A fresh round source for one run of environment ``config`` (call ``reset`` before use)."""
    from privbandits.envs.classification import ClassificationBandit
    from privbandits.envs.clustered import ClusteredLinearBandit, PooledUsersBandit, assign_groups
    from privbandits.envs.kmeans_arms import KMeansArmsBandit
    from privbandits.envs.synthetic import LinearGaussianBandit

    kind = config.kind
    if kind == "linear_gaussian":
        return EnvironmentSource(
            LinearGaussianBandit(
                dim=config.dim,
                n_arms=config.n_arms,
                context_variance=config.context_variance,
                theta_variance=config.theta_variance,
                noise_variance=config.noise_variance,
            )
        )
    if kind == "digits":
        data = _digits(config.pca_components, config.unit_norm)
        return EnvironmentSource(ClassificationBandit(data.features, data.labels, order=config.order))
    if kind == "mnist":
        split = getattr(_mnist(config.path, _sha(config.path), config.pca_components), config.split)
        return EnvironmentSource(ClassificationBandit(split.features, split.labels, order=config.order))
    if kind == "mnist5k":
        data = _mnist5k(config.path, _sha(config.path), config.pca_components, config.held_out, config.split_seed)
        split = getattr(data, config.split)
        return EnvironmentSource(ClassificationBandit(split.features, split.labels, order=config.order))
    if kind in ("clustered_users", "pooled_users"):
        if kind == "clustered_users":
            env = ClusteredLinearBandit(
                config.n_users,
                config.n_clusters,
                config.dim,
                config.n_arms,
                construction=config.construction,
                noise_std=config.noise_std,
                assignment=config.assignment,
            )
        else:
            pool = _pool(config.source, config.path, _sha(config.path), config.dim, config.n_clusters)
            draw = config.draw if config.draw is not None else config.source == "movielens"
            env = PooledUsersBandit(pool, config.n_users, config.n_arms, draw=draw)
        servers = assign_groups(config.n_users, config.n_servers, remainder_last=True)
        return EnvironmentSource(env, servers)
    if kind == "kmeans_arms":
        features, centres = _kmeans(
            config.data, config.path, _sha(config.path), config.pca_components, config.n_arms, config.kmeans_seed
        )
        return EnvironmentSource(KMeansArmsBandit(features, centres, config.bandwidth))
    if kind == "multilabel":
        paths = None if config.paths is None else tuple(config.paths)
        shas = () if paths is None else tuple(_sha(p) for p in paths)
        contexts, rewards = _multilabel(
            config.dataset, paths, shas, config.label_location, config.stand_in_seed, config.n_actions, config.dim
        )
        return EnvironmentSource(ClassificationBandit(contexts, rewards, order=config.order))
    if kind in ("obd_replay", "logged_replay"):
        data, contexts = obd_log(config) if kind == "obd_replay" else logged_npz(config)
        return ReplaySource(data, contexts, order=config.order, allow_nonuniform=config.allow_nonuniform)
    raise ValueError(f"environment kind {kind!r} is not a stream of rounds")


def build_population(config, interactions: int, seed: int):
    """The users of a population environment (P2B) with ``interactions`` rounds each."""
    from privbandits.envs.p2b_synthetic import P2BSynthetic

    if config.kind == "multilabel_population":
        from privbandits.datasets.multilabel import multilabel_interactions, multilabel_stand_in

        options = dict(
            n_users=config.n_users,
            decimals=config.decimals,
            shuffle_seed=config.shuffle_seed,
            n_actions=config.n_actions,
            dim=config.dim,
        )
        if config.paths is None:
            data = multilabel_stand_in(config.dataset, config.stand_in_seed, **options)
        else:
            data = multilabel_interactions(
                config.dataset, config.paths, label_location=config.label_location, **options
            )
        if interactions > data.n_interactions:
            raise ValueError(
                f"horizon {interactions} exceeds the {data.n_interactions} interactions per user of "
                f"{config.dataset} with {data.n_users} users"
            )
        return data.first(interactions)

    generator = P2BSynthetic(
        config.dim,
        config.n_actions,
        config.mapping,
        config.contexts,
        config.decimals,
        config.beta,
        config.noise_std,
        seed=seed if config.data_seed is None else config.data_seed,
    )
    return generator.generate(config.n_users, interactions)
