"""One FCLUB run: a setting, an algorithm, a horizon and a seed, summarised as a task result.

:func:`run_algorithm` is the run itself (seeded by :func:`~privbandits.protocols.fclub.run_fclub`
and :func:`~privbandits.protocols.fclub.baselines.run_baseline`); :func:`simulate` is the
task function the store keys by its complete parameters, the MovieLens data file's
identity included (:func:`run_task`).
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from privbandits.datasets.movielens import (
    FCLUB_FILES,
    default_fclub_data_path,
    load_interactions,
    most_active,
    preference_vectors,
)
from privbandits.datasets.movielens100k import read_ratings
from privbandits.envs.clustered import ClusteredLinearBandit, PooledUsersBandit, assign_groups
from privbandits.experiments.later_options import FCLUB_LATER_OPTIONS, fclub_later_off, without_later
from privbandits.experiments.noise_key import FCLUB_UPLOADS
from privbandits.experiments.tasks import Task, canonical_json, file_identity, identity_path
from privbandits.papers.fclub.options import ALGORITHMS, FAITHFUL
from privbandits.privacy.noise import NOISE_SAMPLER
from privbandits.protocols.fclub.baselines import BaselineConfig, LocalBaseline, run_baseline
from privbandits.protocols.fclub.config import FCLUBConfig
from privbandits.protocols.fclub.driver import run_fclub
from privbandits.protocols.fclub.rounds import FCLUBOutcome

KINDS = ("synthetic", "movielens-100k", "movielens", "movielens-reference", "reference-synthetic")
DATA_FILES = {"movielens": FCLUB_FILES["movielens"], "movielens-reference": FCLUB_FILES["movielens_reference_vectors"],
              "reference-synthetic": "raw_data/synthetic_data/10_theta.npy",
              "movielens-100k": "MovieLens-100K ratings (ml-100k.inter or u.data)"}  # fmt: skip
"""The data file each kind reads (in the ``data_dir`` option's folder; ``reference-synthetic``: in a checkout of
the reference code, which the project does not ship)."""

_VARIANTS = {"CDP-FCLUB-DC": "cdp-fclub-dc", "FCLUB-DC": "fclub-dc", "FCLUB": "fclub", "Homo-DC": "homo-dc",
             "Homo": "homo"}  # fmt: skip
_BASELINES = {"SCLUB": "sclub", "CLUB": "club", "LinUCB": "linucb"}
PRESETS = {FAITHFUL: ("cdp-fclub-dc", "paper"), **{name: (variant, "reference") for name, variant in _VARIANTS.items()}}
"""The FCLUB-family names of the reproductions (their figures' legends, ``-o algorithms=``, the store keys) as the
experiment configs and deployment files name them: (``variant``, ``preset``)."""
PAPER_NOISE = {FAITHFUL: {"noise_variance": "squared_log"}}
"""The noise each reproduction names over its preset: the faithful algorithm's is the paper's printed form (spec §8
A4), which it was stored with (its key holds no options), not the analytic Gaussian that is the library's default;
the reference preset names its own (the reference code's)."""
SIMULATE = "privbandits.papers.fclub.runs:simulate"


@dataclass(frozen=True)
class Setting:
    """One environment of the experiments (spec §6.2): synthetic or MovieLens-style, and its sizes.

    ``construction`` is the synthetic θ/item/reward model ("reference": the reference code's
    Bernoulli setting, "paper": orthonormal θ with Gaussian noise); ``movielens`` draws the users
    from the preference vectors of the MovieLens matrix ``data`` (real data, recipe of A19);
    ``movielens-100k`` runs the same recipe from MovieLens-100K's raw ratings ``data`` (the data cache's
    ``ml-100k.inter`` or GroupLens's ``u.data``: the most active ≤ 1,000 users × 1,000 movies, binary);
    ``movielens-reference`` takes the first users of the reference code's own MovieLens vectors
    ``data`` (10 k-means centres, spec §7.7), as its experiments did; ``reference-synthetic`` takes the
    reference code's own synthetic users ``data`` (``10_theta.npy``: 4 θ's × 10 users, issue 15), in order.
    """

    kind: str = "synthetic"
    n_users: int = 40
    n_clusters: int = 4
    n_servers: int = 5
    dim: int = 10
    n_arms: int = 10
    construction: str = "reference"
    epsilon: float = 1.0
    data: Path | None = field(default=None, compare=False)
    """The data file of a MovieLens kind (:data:`DATA_FILES`); not part of :attr:`key`."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")

    def sizes(self) -> dict[str, Any]:
        """Every field but the data file (which enters a task as its identity)."""
        return {k: v for k, v in asdict(self).items() if k != "data"}

    @property
    def key(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.sizes().items())

    def environment(self) -> ClusteredLinearBandit:
        if self.kind == "synthetic":
            return ClusteredLinearBandit(self.n_users, self.n_clusters, self.dim, self.n_arms,
                                         construction=self.construction)  # fmt: skip
        path = self._data_file()
        if self.kind == "movielens":
            return PooledUsersBandit(_movielens_pool(path, self.dim, self.n_clusters), self.n_users, self.n_arms)
        if self.kind == "movielens-100k":
            return PooledUsersBandit(_ratings_pool(path, self.dim, self.n_clusters), self.n_users, self.n_arms)
        return PooledUsersBandit(_reference_vectors(path, self.dim), self.n_users, self.n_arms, draw=False)

    @property
    def label(self) -> str:
        """What the users are, for tables."""
        return {"synthetic": f"synthetic ({self.construction})", "reference-synthetic": "the reference code's "
                "40 synthetic users"}.get(self.kind, self.kind)  # fmt: skip

    def _data_file(self) -> Path:
        name = DATA_FILES[self.kind]
        if self.data is None or not Path(self.data).is_file():
            raise FileNotFoundError(f"{name} is absent: {self.kind} needs it (got {self.data})")
        return Path(self.data)


def with_data(setting: Setting, data_dir: Path | None) -> Setting | None:
    """``setting`` with its data file from ``data_dir`` (default ../shared/data/fclub); None if that is absent."""
    if setting.kind == "synthetic":
        return setting
    folder = data_dir if data_dir is not None else default_fclub_data_path()
    path = None if folder is None else Path(folder) / DATA_FILES[setting.kind]
    return replace(setting, data=path) if path is not None and path.is_file() else None


@cache
def _movielens_pool(path: Path, dim: int, n_clusters: int) -> np.ndarray:
    """θ of the users of the MovieLens matrix at ``path`` (SVD + k-means, k = m; spec A19)."""
    return preference_vectors(load_interactions(path), dim, n_clusters).user_thetas


@cache
def _ratings_pool(path: Path, dim: int, n_clusters: int) -> np.ndarray:
    """θ of the most active users of a raw MovieLens ratings file (A19 from raw ratings: the binary user × movie
    matrix, top ≤ 3,000 users → top 1,000 movies → top 1,000 users, the reference code's steps; then SVD + k-means
    with k = m). MovieLens-100K has 943 users, so all of them enter."""
    binary = read_ratings(path).binary().matrix
    users, movies = binary.shape
    return preference_vectors(most_active(binary, min(users, 1000), min(movies, 1000)), dim, n_clusters).user_thetas


@cache
def _reference_vectors(path: Path, dim: int) -> np.ndarray:
    """The reference code's per-user vectors (MovieLens: 1000 users, 10 distinct k-means centres; synthetic:
    ``10_theta.npy``, 40 users)."""
    vectors = np.load(path, allow_pickle=False)
    if vectors.ndim != 2 or vectors.shape[1] != dim:
        raise ValueError(f"the reference vectors in {path} have shape {vectors.shape}, need (users, dim={dim})")
    return vectors


def fclub_config(name: str, setting: Setting, horizon: int, overrides: dict[str, Any] | None = None) -> FCLUBConfig:
    """The protocol options of an FCLUB-family algorithm (the reference-compatible preset, or the faithful one),
    then ``overrides`` (the reference behaviours' ablation, issue 15)."""
    options = {"horizon": horizon, "epsilon": setting.epsilon, "m_bound": setting.n_clusters,
               **PAPER_NOISE.get(name, {}), **(overrides or {})}  # fmt: skip
    if name in PRESETS:
        return FCLUBConfig.from_preset(*PRESETS[name], **options)
    raise ValueError(f"unknown algorithm {name!r}; known: {', '.join(ALGORITHMS)}")


def run_algorithm(
    name: str, setting: Setting, horizon: int, seed: int, overrides: dict[str, Any] | None = None
) -> tuple[FCLUBOutcome, ClusteredLinearBandit]:
    """One run of a named algorithm (:data:`ALGORITHMS`) on ``setting`` with ``seed``, and its environment.

    The reference preset's noise scale exceeds Eq. 7's ρ by design: its warning is silenced (the releases
    are still counted in ``bandit.repairs``); the faithful run keeps it.
    """
    env = setting.environment()
    if name in _BASELINES:
        baseline = BaselineConfig(kind=LocalBaseline(_BASELINES[name]), horizon=horizon)
        return run_baseline(baseline, env, setting.n_servers, seed), env
    config = fclub_config(name, setting, horizon, overrides)
    with warnings.catch_warnings():
        if name != FAITHFUL:
            warnings.filterwarnings("ignore", message="FCLUB: privatizer noise exceeded")
        return run_fclub(config, env, setting.n_servers, seed), env


def kept_rounds(horizon: int, points: int = 200) -> np.ndarray:
    """1-based rounds stored per run: evenly spaced, plus every phase end t = 2^s − 2 (log-scale views)."""
    ends = [2**s - 2 for s in range(2, horizon.bit_length() + 1) if 2**s - 2 <= horizon]
    return np.unique(np.concatenate([np.linspace(1, horizon, points).round(), ends, [horizon]]).astype(np.int64))


def clusters_found(outcome: FCLUBOutcome, env: ClusteredLinearBandit, n_servers: int) -> bool | None:
    """Whether the final partition is the truth: global clusters, or each server's cells for local baselines."""
    partition = getattr(outcome.bandit, "partition", None)
    if partition is None:
        return None
    found = partition()
    truth = frozenset(frozenset(np.flatnonzero(env.cluster_of == c).tolist()) for c in range(env.n_clusters))
    if found == truth:
        return True
    servers = assign_groups(env.n_users, n_servers, remainder_last=True)
    cells = frozenset(frozenset(np.flatnonzero((env.cluster_of == c) & (servers == s)).tolist())
                      for c in range(env.n_clusters) for s in range(n_servers)) - {frozenset()}  # fmt: skip
    return found == cells


def summarise(outcome: FCLUBOutcome, env: ClusteredLinearBandit, n_servers: int, horizon: int,
              kinds: bool = False) -> dict[str, Any]:  # fmt: skip
    """A run as stored: regret and communication at :func:`kept_rounds`, counts, timing, clustering (and, with
    ``kinds``, the protocol's messages by kind)."""
    rounds = kept_rounds(horizon) - 1
    counts = outcome.bandit.communication
    traffic = getattr(outcome.bandit, "traffic", None)  # the protocol's, measured (the baselines send nothing)
    extra = {"communication_kinds": {k: v for k, v in asdict(counts).items() if k != "synchronous"}} if kinds else {}
    return (
        extra
        | {
            "regret": outcome.regret[rounds].round(3).tolist(),
            "communication": outcome.communication[rounds].tolist(),
            "reference_communication": counts.reference,
            "bytes": traffic and traffic.total().bytes,
            "ms_per_round": outcome.ms_per_round,
            "clusters_found": clusters_found(outcome, env, n_servers),
            "rho_exceeded": getattr(getattr(outcome.bandit, "repairs", None), "rho_exceeded", 0),
        }
        | privacy_of(outcome.bandit)
    )


def privacy_of(bandit: Any) -> dict[str, float]:
    """A private run's claimed ε (∞ when its preset has no guarantee) and how many contexts and rewards were
    clipped to the bounds the guarantee assumes; nothing for runs that privatize nothing."""
    if not getattr(getattr(bandit, "config", None), "private", False):
        return {}
    return {"claimed_epsilon": bandit.privacy_report().claimed_epsilon} | bandit.bounds.metrics()


def setting_of(sizes: dict[str, Any], data: dict[str, str] | None) -> Setting:
    """The :class:`Setting` of a task's parameters (``data``: a :func:`file_identity` or None)."""
    return Setting(**sizes, data=identity_path(data))


def simulate(algorithm: str, setting: dict[str, Any], horizon: int, seed: int, data: dict[str, str] | None,
             config: str | None = None, overrides: dict[str, Any] | None = None,
             noise_sampler: str | None = None, fclub_uploads: str | None = None) -> dict:  # fmt: skip
    """Task: one run, summarised at :func:`kept_rounds` (BLAS limited to one thread).

    ``config`` is the digest of the reference preset's options (:func:`config_digest`), ``noise_sampler`` the
    DP noise sampler of a private run and ``fclub_uploads`` how its uploads meet the noise grid
    (``noise_key.FCLUB_UPLOADS``): only in the key, so that a changed preset or release is a different task;
    ``overrides`` change the preset (the issue-15 ablation).
    """
    where = setting_of(setting, data)
    with threadpool_limits(limits=1):
        outcome, env = run_algorithm(algorithm, where, horizon, seed, overrides)
    return summarise(outcome, env, where.n_servers, horizon, kinds=config is not None)


def config_digest(name: str, setting: Setting, horizon: int, overrides: dict[str, Any] | None = None) -> str | None:
    """SHA-256 (16 hex digits) of a reference-compatible algorithm's complete options; None for the others
    (their options are fixed by the name: faithful defaults, baselines)."""
    if name not in _VARIANTS:
        return None
    options = without_later(
        asdict(fclub_config(name, setting, horizon, overrides)), FCLUB_LATER_OPTIONS, fclub_later_off
    )
    return hashlib.sha256(canonical_json(options).encode()).hexdigest()[:16]


def run_label(name: str, setting: Setting, horizon: int, seed: int) -> str:
    return f"{setting.key}|{name}|T={horizon}|seed={seed}"


def run_task(name: str, setting: Setting, horizon: int, seed: int, prefix: str = "",
             overrides: dict[str, Any] | None = None) -> Task:  # fmt: skip
    """The unit of one run: the same for every reproduction that needs it (only the label may differ).

    A reference-compatible algorithm's key holds the digest of its options, so a changed preset (issue 15
    added the reference code's merge rule and double count) is recomputed, never read from an older store.
    """
    params = {"algorithm": name, "setting": setting.sizes(), "horizon": horizon, "seed": seed,
              "data": file_identity(setting.data)}  # fmt: skip
    digest = config_digest(name, setting, horizon, overrides)
    if digest is not None:
        params["config"] = digest
    if (name == FAITHFUL or name in _VARIANTS) and fclub_config(name, setting, horizon, overrides).private:
        params |= {"noise_sampler": NOISE_SAMPLER, **FCLUB_UPLOADS}  # its draws come from privacy/noise.py
    if overrides:
        params["overrides"] = dict(overrides)
    return Task(SIMULATE, params, prefix + run_label(name, setting, horizon, seed))


def runs_of(points: dict[str, dict], name: str, setting: Setting, horizon: int, seeds: int, prefix: str = "") -> list:
    """The stored results of seeds 0 … seeds − 1 (labels as :func:`run_task` with ``prefix``)."""
    return [points[prefix + run_label(name, setting, horizon, s)] for s in range(seeds)]


def curves(points: dict[str, dict], name: str, setting: Setting, horizon: int, seeds: int, key: str,
           prefix: str = "") -> np.ndarray:  # fmt: skip
    """``key`` (a per-round series) of every seed's run, one row per seed."""
    return np.array([run[key] for run in runs_of(points, name, setting, horizon, seeds, prefix)], dtype=float)
