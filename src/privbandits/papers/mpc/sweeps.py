"""The units that play a learner on data: one run of a sweep, one membership-inference run.

A sweep unit stores every round's 0/1 reward (bit-packed), so reports compute any
prefix mean or running curve from it: Fig. 3 with other ``fractions`` reuses the
stored runs. Units of different reproductions with the same learner, seed and data
are the same task (e.g. Fig. 8 at the integer mask and L = 20 and Fig. 9 at 7
iterations), stored once.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from privbandits.datasets.cache import cached, cached_folder
from privbandits.datasets.mnist import BanditDataset, digits_stand_in, load_mnist
from privbandits.datasets.mnist5k import MNIST5K_HELD_OUT, fashion_mnist_bandit, mnist5k_bandit
from privbandits.envs.base import Environment
from privbandits.envs.classification import ClassificationBandit
from privbandits.envs.kmeans_arms import KMeansArmsBandit, kmeans_centres
from privbandits.experiments.later_options import mpc_store_params
from privbandits.experiments.tasks import Task, canonical_json, file_identity, identity_path
from privbandits.privacy.membership import membership_advantages
from privbandits.protocols.mpc_bandit import MPCBanditConfig, PlaintextEpsilonGreedy, PrivateEpsilonGreedy

_MODULE = "privbandits.papers.mpc.sweeps"
DIGITS: dict[str, Any] = {"kind": "classification"}
"""The environment of Fig. 2, 3, 8 and 9: the data set's classes as arms, reward 1 for the true label."""


def kmeans_env(arms: int, bandwidth: float, centres_seed: int = 0) -> dict[str, Any]:
    """The environment of Fig. 6: ``arms`` k-means centres, Bernoulli(exp(−‖x − c_a‖²/(2σ))) rewards."""
    return {"kind": "kmeans", "arms": arms, "bandwidth": bandwidth, "centres_seed": centres_seed}


# -- data and environments -------------------------------------------------------------------------
def data_params(data: str, mnist: Path | None = None) -> dict[str, Any]:
    """The task parameters that identify the data set ``data`` (an options' resolved ``data``).

    Every file read is in them by path and content hash (:func:`file_identity`), so a changed file is
    a different task. Units on the digits stand-in or an MNIST folder keep the ``mnist`` parameter
    they had before the ``data`` option existed (their stored results stay valid); the cached real
    data sets add ``data``: the set, its file and, for MNIST-5k, the held-out split.
    """
    if data == "digits":
        return {"mnist": None}
    if data == "mnist":
        if mnist is None:
            raise ValueError("data = 'mnist' needs the IDX folder as mnist=<folder>")
        return {"mnist": file_identity(mnist)}
    if data == "mnist5k":
        spec = {"set": data, "file": file_identity(cached("mnist5k")), "held_out": MNIST5K_HELD_OUT, "split_seed": 0}
    elif data == "fashion":
        spec = {"set": data, "file": file_identity(cached_folder("fashion-mnist"))}
    else:
        raise ValueError(f"data must be one of mnist5k, fashion, mnist, digits (resolved), got {data!r}")
    return {"mnist": None, "data": spec}


@cache
def _load(text: str) -> BanditDataset:
    spec = json.loads(text)
    kind = spec.get("set")
    if kind == "mnist5k":
        path = identity_path(spec["file"])
        _check_same(spec["file"], path)
        return mnist5k_bandit(path, held_out=spec["held_out"], seed=spec["split_seed"])
    if kind == "fashion":
        path = identity_path(spec["file"])
        _check_same(spec["file"], path)
        return fashion_mnist_bandit(path)
    path = identity_path(spec.get("mnist"))
    return load_mnist(path) if path is not None else digits_stand_in()


def _check_same(identity: dict[str, str], path: Path | None) -> None:
    """The file a unit was keyed on must be the file it reads (it may have changed since the key was made)."""
    now = file_identity(path)
    if now is None or now["sha256"] != identity["sha256"]:
        raise ValueError(f"{path} changed after its tasks were made (SHA-256 {identity['sha256']} expected); run again")


def dataset(mnist: dict[str, str] | None = None, data: dict[str, Any] | None = None) -> BanditDataset:
    """The data set of a unit's parameters (cached per process)."""
    return _load(canonical_json({"mnist": mnist} if data is None else data))


def data_info(data: BanditDataset) -> dict[str, Any]:
    """What a report says about the data: its source, whether it is the stand-in, and its sizes."""
    return {"source": data.source, "stand_in": data.stand_in, "train": len(data.train.labels),
            "test": len(data.test.labels)}  # fmt: skip


@cache
def _centres(text: str, arms: int, seed: int) -> np.ndarray:
    return kmeans_centres(_load(text).train.features, arms, seed)


def environment(
    data: BanditDataset, mnist: dict[str, str] | None, env: dict[str, Any], spec: dict[str, Any] | None = None
) -> Environment:
    """The environment ``env`` (:data:`DIGITS` or :func:`kmeans_env`) on ``data`` (``mnist``/``spec``: its identity)."""
    if env["kind"] == "classification":
        return ClassificationBandit(data.train.features, data.train.labels)
    if env["kind"] == "kmeans":
        text = canonical_json({"mnist": mnist} if spec is None else spec)
        centres = _centres(text, env["arms"], env["centres_seed"])
        return KMeansArmsBandit(data.train.features, centres, env["bandwidth"])
    raise ValueError(f"unknown environment kind {env['kind']!r}")


# -- one run ---------------------------------------------------------------------------------------------
def play(
    learner: PrivateEpsilonGreedy | PlaintextEpsilonGreedy, env: Environment, rounds: int, seed: int
) -> np.ndarray:
    """Rewards of ``rounds`` rounds of ``learner`` on ``env`` (reset with ``seed``)."""
    env.reset(np.random.default_rng(seed))
    rewards = np.empty(rounds)
    for t in range(rounds):
        arm = learner.step(env.next_round().contexts, env.reward)
        rewards[t] = env.reward(arm)
    return rewards


def pack(rewards: np.ndarray) -> str:
    """0/1 rewards as base64 of their bits."""
    if not np.isin(rewards, (0.0, 1.0)).all():
        raise ValueError("only 0/1 rewards can be packed")
    return base64.b64encode(np.packbits(rewards.astype(np.uint8)).tobytes()).decode("ascii")


def rewards_of(result: dict[str, Any]) -> np.ndarray:
    """The per-round rewards (float64) of a stored sweep result."""
    bits = np.unpackbits(np.frombuffer(base64.b64decode(result["rewards"]), dtype=np.uint8))
    return bits[: result["rounds"]].astype(np.float64)


def sweep(
    config: dict[str, Any],
    private: bool,
    seed: int,
    sweeps: int,
    env: dict[str, Any],
    mnist: dict[str, str] | None,
    data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Unit: ``sweeps`` passes over the training set of the private learner (or its plaintext twin)
    seeded ``seed``, the data order seeded ``1000 + seed``."""
    bandit = dataset(mnist, data)
    settings = MPCBanditConfig(**config)
    learner = PrivateEpsilonGreedy(settings, seed=seed) if private else PlaintextEpsilonGreedy(settings, seed=seed)
    rewards = play(learner, environment(bandit, mnist, env, data), sweeps * len(bandit.train.labels), 1000 + seed)
    return {
        "rounds": len(rewards),
        "rewards": pack(rewards),
        "mean": float(rewards.mean()),
        "invalid": learner.invalid_openings if isinstance(learner, PrivateEpsilonGreedy) else None,
        "data": data_info(bandit),
    }


def sweep_task(
    label: str,
    config: MPCBanditConfig,
    *,
    private: bool,
    seed: int,
    data: dict[str, Any],
    sweeps: int = 1,
    env: dict[str, Any] = DIGITS,
) -> Task:
    """The :func:`sweep` unit: the whole learner config, the seed and the data's identity
    (:func:`data_params`) in its key."""
    learner = mpc_store_params(config, twin=not private)
    params = {"config": learner, "private": private, "seed": seed, "sweeps": sweeps, "env": env, **data}
    return Task(f"{_MODULE}:sweep", params, label)


# -- one membership-inference run ---------------------------------------------------------------------
def membership(
    config: dict[str, Any],
    seed: int,
    checkpoints: int,
    mnist: dict[str, str] | None,
    data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Unit: one sweep of the plaintext twin seeded ``seed`` (data order ``1000 + seed``), with both
    membership-inference advantages at ``checkpoints`` evenly spaced points (spec §6.5)."""
    bandit = dataset(mnist, data)
    settings = MPCBanditConfig(**config)
    n = len(bandit.train.labels)
    at = [round(n * (k + 1) / checkpoints) for k in range(checkpoints)]
    eye = np.eye(settings.n_arms)
    nonmembers = (bandit.test.features, eye[bandit.test.labels])
    learner = PlaintextEpsilonGreedy(settings, seed=seed)
    rng = np.random.default_rng(1000 + seed)
    order = rng.permutation(n)
    result: dict[str, Any] = {"at": at, "per_arm": [], "reward_gap": [], "data": data_info(bandit)}
    for t, index in enumerate(order, start=1):
        label = bandit.train.labels[index]
        learner.step(bandit.train.features[index], _reward_for(label))
        if t in at:
            seen = order[:t]
            members = (bandit.train.features[seen], eye[bandit.train.labels[seen]])
            advantages = membership_advantages(*learner.checkpoint(), members, nonmembers, settings.epsilon, rng)
            result["per_arm"].append(advantages.per_arm)
            result["reward_gap"].append(advantages.reward_gap)
    return result


def membership_task(label: str, epsilon: float, *, seed: int, checkpoints: int, data: dict[str, Any]) -> Task:
    """The :func:`membership` unit of the twin with exploration ``epsilon`` (``data``: :func:`data_params`)."""
    config = mpc_store_params(MPCBanditConfig(epsilon=epsilon), twin=True)
    params = {"config": config, "seed": seed, "checkpoints": checkpoints, **data}
    return Task(f"{_MODULE}:membership", params, label)


def _reward_for(label: int) -> Callable[[int], float]:
    """The pull of a round whose true class is ``label``: reward 1 for that arm, 0 for any other."""
    return lambda arm: float(arm == label)
