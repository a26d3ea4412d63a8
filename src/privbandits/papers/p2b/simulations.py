"""The units of work of the P2B reproductions: one simulation each, returning JSON data.

Each function is a task's ``fn``; its keyword parameters are the task's complete
parameters (data files as :func:`~privbandits.experiments.tasks.file_identity`).
Data sets are loaded once per process (a worker computing several values of t of
one data set reuses them); encoders come from the on-disk cache of their
deterministic fit.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from privbandits.datasets.interactions import UserInteractions
from privbandits.experiments.tasks import identity_path
from privbandits.papers.p2b.common import EARLY_FRACTION, SETTINGS
from privbandits.privacy.encoding import load_or_fit_encoder
from privbandits.protocols.p2b.core import P2BConfig, P2BOutcome, simulate

PRECISION = 1
"""q: contexts are encoded to one decimal digit (spec §5.1)."""

MODES = {
    "default": P2BConfig(),
    "reference": P2BConfig(representation="scalar_code", shared_warm_agent=True),
}
"""Simulation configs: one-hot codes and a warm copy per user, or the reference code's scalar codes and
one shared warm agent (spec §9.1, §9.2)."""

Identity = dict[str, str] | None


def _settings(outcome: P2BOutcome) -> dict[str, float]:
    """Mean and std over late users of each setting's reward."""
    return {
        **{name: getattr(outcome, name).mean for name in SETTINGS},
        **{f"{name}_std": getattr(outcome, name).std for name in SETTINGS},
    }


def _release(outcome: P2BOutcome) -> dict[str, float]:
    """What the shuffler released of the encoded tuples shared."""
    return {
        "released": outcome.release["released"],
        "shared": outcome.encoded_tuples_shared,
        "min_crowd": outcome.release["min_released_crowd"],
    }


def _simulate(data: UserInteractions, n_codes: int, mode: str, seed: int) -> P2BOutcome:
    return simulate(data, load_or_fit_encoder(data.dim, PRECISION, n_codes), MODES[mode], seed=seed)


# -- synthetic users (Fig. 4, Fig. 5) -------------------------------------------------------------
def synthetic_point(
    *, early: int, rounds: int, dim: int, n_actions: int, n_codes: int, mapping: str, mode: str, seed: int
) -> dict[str, Any]:
    """One simulation of the synthetic benchmark; early users as on the reference's x-axis (spec §9.17)."""
    from privbandits.envs.p2b_synthetic import p2b_synthetic_interactions

    data = p2b_synthetic_interactions(round(early / EARLY_FRACTION), rounds, dim, n_actions, mapping=mapping, seed=seed)
    outcome = _simulate(data, n_codes, mode, seed)
    return {
        **_settings(outcome),
        "late_users": outcome.cold.n_users,
        **_release(outcome),
        "epsilon": outcome.ledger.entries[-1].epsilon,
    }


# -- multi-label data (Fig. 6) ---------------------------------------------------------------------
def _frozen(identity: Identity) -> tuple[str, str] | None:
    """A file identity as a hashable cache key: the content hash is part of it, so a changed file is reloaded."""
    return None if identity is None else (identity["path"], identity["sha256"])


@lru_cache(maxsize=4)
def _multilabel(name: str, files: tuple[tuple[str, str], ...] | None, seed: int) -> UserInteractions:
    from privbandits.datasets.multilabel import multilabel_interactions, multilabel_stand_in

    return multilabel_interactions(name, [path for path, _ in files]) if files else multilabel_stand_in(name, seed)


def multilabel_point(
    *, name: str, files: list[dict[str, str]] | None, t: int, n_codes: int, mode: str, seed: int
) -> dict[str, Any]:
    """MediaMill or TMC2007 (ARFF files, else the offline stand-in) at t interactions per user.

    A data set with fewer than t interactions per user gives its description only.
    """
    data = _multilabel(name, tuple(_frozen(identity) for identity in files) if files else None, seed)
    about = {"source": data.source, "is_real": data.is_real, "n_interactions": data.n_interactions}
    if t > data.n_interactions:
        return about
    return {**about, **_settings(_simulate(data.first(t), n_codes, mode, seed))}


# -- Criteo (Fig. 7) and the Open Bandit Dataset sample --------------------------------------------
@lru_cache(maxsize=2)
def _criteo(path: tuple[str, str] | None, stand_in: tuple[int, ...] | None, seed: int) -> UserInteractions:
    from privbandits.datasets.p2b_criteo import criteo_interactions, criteo_stand_in

    if path is not None:
        return criteo_interactions(path[0])
    assert stand_in is not None, "a stand-in's sizes where no file is given"
    users, interactions = stand_in
    return criteo_stand_in(seed, n_users=users, n_interactions=interactions)


def _criteo_data(path: Identity, stand_in: list[int] | None, seed: int) -> UserInteractions:
    return _criteo(_frozen(path), None if path or stand_in is None else tuple(stand_in), seed)


def criteo_summary(*, path: Identity, stand_in: list[int] | None, seed: int) -> dict[str, Any]:
    """The Criteo users (the log at ``path``, else a stand-in of ``stand_in`` = [users, t]): size and baseline."""
    data = _criteo_data(path, stand_in, seed)
    late = data.split(EARLY_FRACTION)[1]
    return {
        "source": data.source,
        "is_real": data.is_real,
        "n_users": data.n_users,
        "n_interactions": data.n_interactions,
        "late_users": late.n_users,
        "context_free": float(late.rewards.reshape(-1, data.n_actions).mean(axis=0).max()),
    }


def criteo_point(
    *, path: Identity, stand_in: list[int] | None, t: int, n_codes: int, mode: str, seed: int
) -> dict[str, Any]:
    """One simulation on the Criteo users' first t interactions."""
    data = _criteo_data(path, stand_in, seed)
    outcome = _simulate(data.first(t), n_codes, mode, seed)
    return {**_settings(outcome), **_release(outcome)}


def obd_point(*, folder: dict[str, str], n_codes: int, mode: str, seed: int) -> dict[str, Any]:
    """The same pipeline on an Open Bandit Dataset campaign (replay of the logged rewards)."""
    from privbandits.datasets.p2b_criteo import obd_interactions

    data = obd_interactions(identity_path(folder))
    outcome = _simulate(data, n_codes, mode, seed)
    shared = {
        "cold": None,
        "warm_non_private": outcome.raw_tuples_shared,
        "warm_private": outcome.encoded_tuples_shared,
    }
    settings = {
        name: {
            "mean": getattr(outcome, name).mean,
            "n_users": getattr(outcome, name).n_users,
            "rounds": getattr(outcome, name).rounds,
            "shared": shared[name],
        }
        for name in SETTINGS
    }
    about = {key: getattr(data, key) for key in ("source", "dim", "n_actions", "n_users", "n_interactions")}
    return {**about, "settings": settings}
