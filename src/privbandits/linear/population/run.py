"""A whole population of users, each playing its own disjoint LinUCB from a copy of the server's model
(:func:`run_population`), and what every user did (:class:`PopulationLog`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from privbandits._kernel_args import read_only
from privbandits.linear.policies import as_generator
from privbandits.linear.population.agents import (
    BatchedLinUCB,
    _check_codes,
    _check_dense_contexts,
    _check_options,
    _check_refresh,
    _check_reward_table,
    _checked_arms,
    _dense_start,
    batched_agents,
)
from privbandits.linear.population.code_kernels import _code_population
from privbandits.linear.population.dense_kernels import _dense_population
from privbandits.linear.population.models import CodeModel, DisjointModel
from privbandits.linear.population.picking import NO_DRAWS
from privbandits.linear.ridge import DEFAULT_REFRESH_EVERY
from privbandits.linear.tiebreak import DEFAULT_TIE_TOLERANCE, TieBreak

DEFAULT_CHUNK_BYTES = 64 * 2**20  # float64 / int64 copies of one chunk's inputs in run_population
_BLOCK_ROWS = 256  # user-rounds per block of the population kernels (their scratch is per block)


@dataclass(frozen=True, eq=False)
class PopulationLog:
    """What every user did: ``arms`` (int64) and revealed ``rewards``, both of shape (n_users, n_rounds).

    A NaN reward marks a round whose chosen arm's reward was unknown (replay).
    """

    arms: np.ndarray
    rewards: np.ndarray

    @property
    def known(self) -> np.ndarray:
        """Number of rounds with a known reward, per user."""
        return np.count_nonzero(~np.isnan(self.rewards), axis=1)

    @property
    def mean_reward(self) -> np.ndarray:
        """Each user's cumulative mean reward over its rounds with a known reward (spec §2.7); NaN if none."""
        known = self.known
        totals = np.nansum(self.rewards, axis=1)
        return np.divide(totals, known, out=np.full(totals.shape, np.nan), where=known > 0)


def run_population(
    model: DisjointModel | CodeModel,
    contexts: np.ndarray,
    reward_table: np.ndarray,
    *,
    alpha: float = 1.0,
    tie_break: TieBreak | str = TieBreak.LOWEST,
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
    rng: np.random.Generator | int | None = None,
    refresh_every: int = DEFAULT_REFRESH_EVERY,
    chunk_size: int | None = None,
    shared_agent: bool = False,
) -> PopulationLog:
    """Run every user for ``n_rounds`` rounds, each from its own copy of ``model`` (spec §2.7, §4.4).

    Each user's arms are those of :class:`BatchedLinUCB` /
    :class:`BatchedCodeLinUCB` started from ``model`` (and of a per-user loop of
    ``LinUCB(layout="disjoint")``), but no per-user state is kept: blocks of
    users play in parallel, each user's statistics being the shared start plus
    its own updates in per-block scratch (see ``_dense_population``), so memory
    is the inputs, the log and one converted chunk. Dense populations whose
    rounds reach ``refresh_every`` instead keep full statistics per user of a
    chunk (:class:`BatchedLinUCB`, one thread), to refresh as LinUCB does.

    Parameters
    ----------
    model : DisjointModel or CodeModel
        The warm start (the server's model) or a cold model (``DisjointModel.cold``, ``CodeModel.cold``).
    contexts : ndarray
        ``(n_users, n_rounds, dim)`` reals for a DisjointModel, ``(n_users,
        n_rounds)`` integer codes in ``[0, n_codes)`` for a CodeModel; any real
        or integer dtype (chunks are converted to float64 / int64 as they run).
    reward_table : ndarray of shape (n_users, n_rounds, n_arms)
        Pre-drawn reward of every arm in every round; a user learns only its
        chosen arm's. NaN marks an unknown reward: a round whose chosen arm's
        reward is NaN teaches nothing and is left out of the user's mean
        (replay of a logged data set, Li et al. 2011).
    alpha, tie_break, tie_tolerance, rng
        As in :class:`BatchedAgents`. Under ``tie_break="random"`` the draws
        are ``rng.random((n_users, n_rounds))``, user-major, in both modes and
        whatever the chunk size.
    refresh_every : int
        Exact inverse refresh period of the dense statistics (0 = never).
    chunk_size : int, optional
        Users converted and simulated together; by default as many as fit in
        ``DEFAULT_CHUNK_BYTES`` of converted inputs.
    shared_agent : bool
        Carry ONE agent, started from ``model`` and never reset, across the
        users in order (user 0's rounds, then user 1's, ...): the reference
        code's warm agents (spec §4.4, §9 item 2). Inherently sequential, so it
        runs on one thread; chunks only bound the converted inputs.

    Returns
    -------
    PopulationLog
    """
    options = _check_options(alpha, tie_break, tie_tolerance)
    refresh_every = _check_refresh(refresh_every)
    contexts, reward_table = np.asarray(contexts), np.asarray(reward_table)
    n_rounds, per_round = _check_inputs(model, contexts)
    n_users = contexts.shape[0]
    _check_reward_table(reward_table, (n_users, n_rounds, model.n_arms))
    if chunk_size is None:
        chunk_size = max(1, DEFAULT_CHUNK_BYTES // (8 * max(1, n_rounds) * per_round))
    elif chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1 (or None for automatic), got {chunk_size}")
    alpha, tie_break, tie_tolerance = options
    agent_options = {"alpha": alpha, "tie_break": tie_break, "tie_tolerance": tie_tolerance, "rng": as_generator(rng)}
    if isinstance(model, DisjointModel):
        agent_options["refresh_every"] = refresh_every
    if shared_agent:
        play = _shared_player(model, n_rounds, agent_options)
    elif isinstance(model, DisjointModel) and 0 < refresh_every <= n_rounds:
        play = _full_player(model, agent_options)  # a refresh falls within the rounds: full statistics per user
    else:
        play = _population_player(model, n_rounds, agent_options)
    return _play_chunks(play, contexts, reward_table, chunk_size)


def _check_inputs(model: DisjointModel | CodeModel, contexts: np.ndarray) -> tuple[int, int]:
    """``(n_rounds, values per user-round)`` of ``contexts`` for ``model``, after checking them."""
    if isinstance(model, DisjointModel):
        return _check_dense_contexts(contexts, model.dim), model.dim + model.n_arms
    if isinstance(model, CodeModel):
        return _check_codes(contexts, model.n_codes), 1 + model.n_arms
    raise ValueError(f"model must be a DisjointModel or a CodeModel, got {type(model).__name__}")


Player = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""Plays one chunk of users: ``(contexts, float64 reward table) -> arms (n_users, n_rounds)``."""


def _shared_player(model: DisjointModel | CodeModel, n_rounds: int, options: dict) -> Player:
    """ONE agent carried across the users in order (the reference code's warm agents, spec §4.4)."""
    agent = batched_agents(model, 1, **options)

    def play(chunk: np.ndarray, table: np.ndarray) -> np.ndarray:
        n = chunk.shape[0]
        sequence = chunk.reshape(1, n * n_rounds, *chunk.shape[2:])
        return agent.run(sequence, table.reshape(1, n * n_rounds, model.n_arms)).reshape(n, n_rounds)

    return play


def _full_player(model: DisjointModel, options: dict) -> Player:
    """Full statistics per user of a chunk (:class:`BatchedLinUCB`), to refresh the inverses as LinUCB does."""

    def play(chunk: np.ndarray, table: np.ndarray) -> np.ndarray:
        return BatchedLinUCB(model, chunk.shape[0], **options).run(chunk, table)

    return play


def _population_player(model: DisjointModel | CodeModel, n_rounds: int, options: dict) -> Player:
    """The parallel population kernels: each user's statistics are the shared start plus its own updates."""
    rng, alpha, tolerance = options["rng"], options["alpha"], options["tie_tolerance"]
    random = options["tie_break"] is TieBreak.RANDOM
    block = max(1, _BLOCK_ROWS // max(1, n_rounds))
    if isinstance(model, CodeModel):
        base_counts, base_sums = np.ascontiguousarray(model.counts.T), np.ascontiguousarray(model.reward_sums.T)

        def play_codes(chunk: np.ndarray, table: np.ndarray) -> np.ndarray:
            uniforms = rng.random(chunk.shape) if random else NO_DRAWS
            Y = read_only(np.ascontiguousarray(chunk, dtype=np.int64))
            return _checked_arms(
                _code_population(base_counts, base_sums, Y, table, alpha, tolerance, random, uniforms, block)
            )

        return play_codes
    _, A_inv, _, theta = _dense_start(model)
    identity = bool((A_inv == np.eye(model.dim)).all() and (theta == 0).all())
    by_cell = np.ascontiguousarray(A_inv.reshape(model.n_arms, -1).T)
    by_row = np.ascontiguousarray(A_inv.transpose(2, 0, 1).reshape(model.dim, -1))
    by_dim = np.ascontiguousarray(theta.T)

    def play(chunk: np.ndarray, table: np.ndarray) -> np.ndarray:
        uniforms = rng.random(chunk.shape[:2]) if random else NO_DRAWS
        X = read_only(np.ascontiguousarray(chunk, dtype=np.float64))
        arms = _dense_population(by_cell, by_row, by_dim, X, table, alpha, tolerance, random, uniforms, block, identity)
        return _checked_arms(arms)

    return play


def _play_chunks(play: Player, contexts: np.ndarray, reward_table: np.ndarray, chunk_size: int) -> PopulationLog:
    """Every chunk of users through ``play``; the log of arms and revealed rewards."""
    n_users, n_rounds = contexts.shape[:2]
    arms = np.empty((n_users, n_rounds), dtype=np.int64)
    rewards = np.empty((n_users, n_rounds))
    with threadpool_limits(limits=1, user_api="blas"):  # BLAS runs inside the parallel kernels' threads
        for start in range(0, n_users, chunk_size):
            users = slice(start, min(start + chunk_size, n_users))
            table = read_only(np.ascontiguousarray(reward_table[users], dtype=np.float64))
            arms[users] = chosen = play(contexts[users], table)
            rewards[users] = np.take_along_axis(table, chosen[:, :, None], axis=2)[:, :, 0]
    return PopulationLog(arms, rewards)
