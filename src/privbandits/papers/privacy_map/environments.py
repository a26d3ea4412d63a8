"""The map's shared problems: each an environment config, its horizon and its natural utility metric."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from privbandits.papers.privacy_map.options import MapOptions

Metric = Literal["regret", "accuracy", "ctr", "late_reward"]

METRIC_NAMES: dict[str, str] = {
    "regret": "final cumulative pseudo-regret (lower is better)",
    "accuracy": "mean reward per round = accuracy (higher is better)",
    "ctr": "replay CTR: clicks per matched event (higher is better)",
    "late_reward": "late users' mean reward (higher is better)",
}
HIGHER_IS_BETTER: dict[str, bool] = {"regret": False, "accuracy": True, "ctr": True, "late_reward": True}


@dataclass(frozen=True)
class MapEnvironment:
    """One panel: ``key`` (an option value), title, the environment table of a config, horizon, metric."""

    key: str
    title: str
    environment: dict[str, Any]
    horizon: int
    metric: Metric
    partition: tuple[int, ...]
    """Features per O3M party (active first); sums to the context dimension."""
    per_arm: bool = True
    """One context per arm (shared-θ models); otherwise one per round (disjoint models)."""
    name: str = ""
    """The experiment name of its runs' specs (default: the key): a different data set is a different name."""

    @property
    def experiment(self) -> str:
        return f"privacy-map-{(self.name or self.key).replace('_', '-')}"

    @property
    def metric_name(self) -> str:
        return METRIC_NAMES[self.metric]


def obd_folder(options: MapOptions) -> Path | None:
    """The OBD campaign folder to replay: the option, else the sample beside the repository, else None."""
    from privbandits.datasets.obd import default_obd_path

    return options.obd_folder if options.obd_folder is not None else default_obd_path()


def _linear_gaussian(options: MapOptions) -> MapEnvironment:
    env = {"kind": "linear_gaussian", "dim": 100, "n_arms": 10}
    return MapEnvironment(
        "linear_gaussian",
        "Linear-Gaussian (vertical paper §5.1: d = 100, K = 10)",
        env,
        options.horizon,
        "regret",
        (20, 20, 20, 20, 20),
    )


def _clustered_users(options: MapOptions) -> MapEnvironment:
    env = {"kind": "clustered_users", "n_users": 40, "n_clusters": 4, "n_servers": 5, "dim": 10, "n_arms": 10}
    return MapEnvironment(
        "clustered_users",
        "Clustered users (FCLUB §6.2: 40 users, 4 clusters, 5 servers, d = 10)",
        env,
        options.horizon,
        "regret",
        (2, 2, 2, 2, 2),
    )


CLASSIFICATION_TITLES = {
    "mnist5k": "MNIST-5k as classification (real MNIST from the data cache: train split, 10 classes, PCA 20, "
    "unit norm)",
    "mnist": "MNIST as classification (train split, 10 classes, PCA 20)",
    "digits": "Digits as classification (MNIST stand-in: 10 classes, PCA 20, unit norm)",
}
"""Panel titles by the options' resolved ``data``: the title says which data ran, the stand-in as such."""


def _classification(options: MapOptions) -> MapEnvironment:
    """The classification panel on the options' resolved ``data`` (digits and IDX-folder specs as before ``data``
    existed, so their stored runs stay valid; MNIST-5k's file enters its specs by path and SHA-256)."""
    env: dict[str, Any]
    if options.data == "mnist":
        env = {"kind": "mnist", "path": str(options.mnist), "pca_components": 20}
    elif options.data == "mnist5k":
        env = {"kind": "mnist5k", "pca_components": 20}
    else:
        env = {"kind": "digits", "pca_components": 20}
    partition = (4, 4, 4, 4, 4)
    return MapEnvironment(
        "classification",
        CLASSIFICATION_TITLES[options.data],
        env,
        options.horizon if options.classification_horizon is None else options.classification_horizon,
        "accuracy",
        partition,
        per_arm=False,
        name=env["kind"],
    )


def _obd(options: MapOptions, folder: Path) -> MapEnvironment:
    from privbandits.experiments.config import OBDReplayEnvConfig

    config = OBDReplayEnvConfig(kind="obd_replay", path=str(folder))
    events, partition = config.shape()
    horizon = events if options.obd_events is None else min(options.obd_events, events)
    active, passive = partition
    split = (active, passive // 2, passive - passive // 2)
    title = f"OBD replay (Open Bandit Dataset sample, {events} events, uniform log)"
    return MapEnvironment("obd", title, {"kind": "obd_replay", "path": str(folder)}, horizon, "ctr", split)


def _p2b(options: MapOptions) -> MapEnvironment:
    env = {"kind": "p2b_synthetic", "n_users": options.p2b_users, "dim": 10, "n_actions": 10, "mapping": "linear"}
    title = f"P2B synthetic population ({options.p2b_users} users, d = 10, |A| = 10, t = 10)"
    return MapEnvironment("p2b_population", title, env, 10, "late_reward", (2, 2, 2, 2, 2), per_arm=False)


def environments(options: MapOptions) -> tuple[list[MapEnvironment], list[str]]:
    """The panels the options ask for, and a note for each that cannot be built (OBD without its folder)."""
    built, notes = [], []
    for key in options.environments:
        if key == "obd":
            folder = obd_folder(options)
            if folder is None:
                notes.append(
                    "OBD replay skipped: no folder at ../shared/data/obd/random/all and no -o obd_folder=PATH given."
                )
                continue
            built.append(_obd(options, folder))
            continue
        builder = {
            "linear_gaussian": _linear_gaussian,
            "clustered_users": _clustered_users,
            "classification": _classification,
            "p2b_population": _p2b,
        }[key]
        built.append(builder(options))
    return built, notes
