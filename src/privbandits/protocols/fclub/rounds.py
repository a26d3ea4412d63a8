"""The round contract FCLUB shares with its local baselines (:mod:`privbandits.protocols.fclub.baselines`): the
check of the users' servers, the per-round :class:`RoundChecks`, and :func:`play`, the round loop that gives an
:class:`FCLUBOutcome`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from math import isfinite

import numpy as np

from privbandits.envs.clustered import ClusteredLinearBandit
from privbandits.linear._kernels import finite_row_norms
from privbandits.protocols.fclub.accounting import Communication
from privbandits.validation import (
    CallOrderError,
    InvalidInputError,
    check_finite_array,
    check_index,
    check_reward,
    describe,
)


def check_server_of_user(server_of_user: np.ndarray, owner: str) -> np.ndarray:
    """The users' local servers as int64: a non-empty 1-D array of integers >= 0 that uses every server index
    0..L-1 (a server without users has nothing to run)."""
    array = np.asarray(server_of_user)
    if array.ndim != 1 or array.size == 0:
        raise InvalidInputError(
            f"{owner}: server_of_user must be a non-empty 1-D array (one server index per user), "
            f"got {describe(server_of_user)} of shape {array.shape}"
        )
    if array.dtype.kind not in "iu" or array.min() < 0:
        raise InvalidInputError(
            f"{owner}: server_of_user must hold integers >= 0, got {describe(server_of_user)} (dtype {array.dtype})"
        )
    missing = np.setdiff1d(np.arange(array.max() + 1), array)
    if missing.size:
        raise InvalidInputError(
            f"{owner}: server_of_user must use every server index 0..L-1 = 0..{array.max()} at least once, "
            f"got none for {describe(missing.tolist())}"
        )
    return array.astype(np.int64)


FLOAT64 = np.dtype(np.float64)
"""Native float64 (numpy caches it, so ``dtype is FLOAT64`` is the fast test)."""


class RoundChecks:
    """The per-round contract of the clustered-users bandits (FCLUB and its local baselines), checked before
    any state changes: ``select(user, contexts)`` with ``user`` in ``[0, n_users)`` and finite float contexts of
    shape ``(n_arms, dim)``, then exactly one ``update(reward)`` with a finite reward.

    Finiteness costs no pass of its own on most rounds: the scoring kernel
    (:func:`~privbandits.linear._kernels.shared_ucb_scores`) gives NaN for a row whose squared norm
    is not finite, the tie-break refuses NaN scores before it draws anything, and :meth:`_recommend`
    then checks the contexts, so the error names the caller's input, not the statistics. Rounds
    that change state before scoring (FCLUB's cluster detection) test the contexts first
    (:meth:`_check_finite`).
    """

    communication: Communication
    _n_users: int
    _shape: tuple[int, int] | None  # None: fixed by the first round (the local baselines)
    _contexts: np.ndarray | None

    def _passes(self, user: object, contexts: object) -> bool:
        """The common round's fast test: a Python int user in range and C float64 contexts of the
        fixed shape (finiteness: see the class). Anything else goes to :meth:`_check_select`, which converts or
        names it."""
        return (
            type(user) is int
            and 0 <= user < self._n_users
            and type(contexts) is np.ndarray
            and contexts.shape == self._shape
            and contexts.dtype is FLOAT64
        )

    def _check_select(self, user: int, contexts: np.ndarray) -> tuple[int, np.ndarray]:
        """``(user, contexts)`` as a Python int and finite float64 contexts, or an error naming the argument."""
        if not (type(user) is int and 0 <= user < self._n_users):
            user = int(check_index(user, self._n_users, "user", "n_users"))
        try:
            shape, kind = contexts.shape, contexts.dtype.char
        except AttributeError:
            raise InvalidInputError(
                f"contexts must be a float array of shape (n_arms, dim) = {self._shape}, got {describe(contexts)}"
            ) from None
        if shape != self._shape:
            raise InvalidInputError(f"contexts have shape {shape}; expected (n_arms, dim) = {self._shape}")
        if kind != "d":
            check_finite_array(contexts, "contexts")  # names a non-numeric dtype
            contexts = contexts.astype(np.float64)
        self._check_finite(contexts)
        return user, contexts

    @staticmethod
    def _check_finite(contexts: np.ndarray) -> None:
        """Float64 contexts of the right shape whose every row has a finite squared norm, or an error naming them."""
        if not finite_row_norms(contexts):
            check_finite_array(contexts, "contexts")  # raises, naming the entry
            raise InvalidInputError(
                f"contexts are too large: a row's squared norm overflows float64 (max |x_i| = "
                f"{np.abs(contexts).max():g})"
            )

    def _recommend(self, server, i: int, contexts: np.ndarray) -> int:
        """``server.recommend(i, contexts)``, which reads but changes nothing before its tie-break refuses a NaN
        score; a refused score is blamed on the contexts when they are at fault (see the class)."""
        try:
            return server.recommend(i, contexts)
        except ValueError:
            self._check_finite(contexts)
            raise

    def _check_update(self, reward: float) -> float:
        if self._contexts is None:
            raise CallOrderError("update(reward) needs a select(user, contexts) first: one update per selected round")
        if not (isinstance(reward, float) and isfinite(reward)):
            reward = check_reward(reward)
        return reward


@dataclass
class FCLUBOutcome:
    """One run: cumulative pseudo-regret and communication per round, and what was measured."""

    regret: np.ndarray
    communication: np.ndarray
    seconds: float
    bandit: RoundChecks

    @property
    def ms_per_round(self) -> float:
        return 1000.0 * self.seconds / len(self.regret)


def play(bandit, env: ClusteredLinearBandit, horizon: int) -> FCLUBOutcome:
    """Play ``horizon`` rounds of a reset ``env`` with a clustered-users bandit.

    ``bandit`` has ``select(user, contexts)``, ``update(reward)`` and a
    :class:`Communication` as ``communication``; the clock covers the rounds only.
    """
    regret, comm = np.empty(horizon), np.empty(horizon, dtype=np.int64)
    counts = bandit.communication
    start = time.perf_counter()
    for t in range(horizon):
        contexts, expected = env.next_round()
        arm = bandit.select(env.user, contexts)
        bandit.update(env.reward(arm))
        regret[t] = expected.max() - expected[arm]
        comm[t] = counts.total
    seconds = time.perf_counter() - start
    return FCLUBOutcome(np.cumsum(regret), comm, seconds, bandit)
