"""Batched agents: ``n_users`` independent disjoint LinUCB agents that act in lockstep, with every user's
state kept for step-by-step use (:meth:`BatchedAgents.select`, :meth:`BatchedAgents.update`) and inspection."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from privbandits._kernel_args import read_only
from privbandits.linear.policies import as_generator, named_choice
from privbandits.linear.population.code_kernels import _code_run, _code_scores_all, _code_update_all
from privbandits.linear.population.dense_kernels import _dense_run, _dense_scores_all, _dense_update_all
from privbandits.linear.population.models import CodeModel, DisjointModel, _check_indices
from privbandits.linear.population.picking import NO_DRAWS, _pick_rows
from privbandits.linear.ridge import DEFAULT_REFRESH_EVERY, exact_inverse
from privbandits.linear.tiebreak import _NAN_MESSAGE, DEFAULT_TIE_TOLERANCE, TieBreak
from privbandits.validation import Integer, Real, check, check_finite_array


class BatchedAgents(ABC):
    """``n_users`` independent disjoint LinUCB agents that act in lockstep.

    Parameters
    ----------
    n_users : int
        Number of users U.
    n_arms : int
        Number of arms K.
    alpha : float
        Exploration weight α of the confidence width (spec §4.3: 1).
    tie_break : {"lowest", "random"}
        Rule among arms tied within ``tie_tolerance`` (module docstring).
    tie_tolerance : float
        Relative tolerance defining a tie.
    rng : Generator, int or None
        Source of the uniform draws of ``tie_break="random"``.
    """

    def __init__(
        self,
        n_users: int,
        n_arms: int,
        *,
        alpha: float = 1.0,
        tie_break: TieBreak | str = TieBreak.LOWEST,
        tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
        rng: np.random.Generator | int | None = None,
    ) -> None:
        n_users = check(n_users, "n_users", Integer(low=1), type(self).__name__)
        self.n_users, self.n_arms = n_users, n_arms
        self.alpha, self.tie_break, self.tie_tolerance = _check_options(alpha, tie_break, tie_tolerance)
        self.rng = as_generator(rng)

    @property
    def _random(self) -> bool:
        return self.tie_break is TieBreak.RANDOM

    def _draws(self, shape: tuple[int, ...]) -> np.ndarray:
        return self.rng.random(shape) if self._random else NO_DRAWS

    @abstractmethod
    def scores(self, x: np.ndarray) -> np.ndarray:
        """Every user's score of every arm for this round's contexts, shape ``(n_users, n_arms)``."""

    def select(self, x: np.ndarray) -> np.ndarray:
        """Every user's arm for this round, shape ``(n_users,)``.

        Under ``tie_break="random"`` each call draws ``rng.random(n_users)``,
        one uniform per user (user order), whether or not the user has a tie.
        """
        scores = self.scores(x)
        uniforms = self._draws((1, self.n_users))
        return _checked_arms(_pick_rows(scores, self.tie_tolerance, self._random, uniforms))

    @abstractmethod
    def update(self, x: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Each user learns the reward of the arm it chose on its context (only that arm's model changes)."""

    def run(self, contexts: np.ndarray, reward_table: np.ndarray) -> np.ndarray:
        """Play ``n_rounds`` rounds for every user; return the chosen arms, shape ``(n_users, n_rounds)``.

        Same decisions and statistics as a loop of :meth:`select` and
        :meth:`update`, in one compiled call. ``reward_table[u, t, a]`` is the
        pre-drawn reward of arm a in user u's round t; only the chosen arm's is
        learnt, and not at all when it is NaN (unknown: replay of a log, where
        a round whose chosen arm was not logged is skipped). Under ``tie_break="random"`` the call draws
        ``rng.random((n_users, n_rounds))`` once, user-major (unlike the loop,
        which draws round by round), so splitting the users into consecutive
        chunks consumes the generator exactly like one call on all of them.
        """
        n_rounds = self._check_run(contexts)
        _check_reward_table(reward_table, (self.n_users, n_rounds, self.n_arms))
        rewards = read_only(np.ascontiguousarray(reward_table, dtype=np.float64))
        return _checked_arms(self._run(contexts, rewards, self._draws((self.n_users, n_rounds))))

    @abstractmethod
    def _check_run(self, contexts: np.ndarray) -> int:
        """Check a run's contexts; return the number of rounds."""

    @abstractmethod
    def _run(self, contexts: np.ndarray, rewards: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
        """The compiled run over checked inputs."""

    def _check_update(self, arms: np.ndarray, rewards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        arms, rewards = np.asarray(arms), np.asarray(rewards)
        if arms.shape != (self.n_users,):
            raise ValueError(f"arms has shape {arms.shape}; expected (n_users,) = ({self.n_users},)")
        if rewards.shape != (self.n_users,):
            raise ValueError(f"rewards has shape {rewards.shape}; expected (n_users,) = ({self.n_users},)")
        _check_indices(arms, "arms", self.n_arms, "n_arms")
        rewards = rewards.astype(np.float64)
        check_finite_array(rewards, "rewards")
        return arms.astype(np.int64), rewards


def _check_options(alpha: float, tie_break: TieBreak | str, tie_tolerance: float) -> tuple[float, TieBreak, float]:
    check(alpha, "alpha", Real(low=0))
    check(tie_tolerance, "tie_tolerance", Real(low=0))
    return float(alpha), named_choice(TieBreak, tie_break, "tie_break"), float(tie_tolerance)


def _check_refresh(refresh_every: int) -> int:
    return check(refresh_every, "refresh_every", Integer(low=0, note="0 = never"))


def _check_reward_table(reward_table: np.ndarray, expected: tuple[int, int, int]) -> None:
    if np.shape(reward_table) != expected:
        raise ValueError(
            f"reward_table has shape {np.shape(reward_table)}; expected (n_users, n_rounds, n_arms) = {expected}"
        )


def _checked_arms(arms: np.ndarray) -> np.ndarray:
    if arms.size and arms.min() < 0:
        raise ValueError(_NAN_MESSAGE)
    return arms


def _dense_start(model: DisjointModel) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(A, A_inv, b, theta)`` of an agent started from ``model``, as ``RidgeStatistics.refresh`` sets them."""
    A_inv = np.empty_like(model.A)
    for arm in range(model.n_arms):
        A_inv[arm] = exact_inverse(model.A[arm], f"model.A[{arm}]")
    theta = np.matmul(A_inv, model.b[:, :, None])[:, :, 0]
    return model.A, A_inv, model.b, theta


class BatchedLinUCB(BatchedAgents):
    """Disjoint LinUCB on dense contexts for ``n_users`` users, each from its own copy of ``model``.

    ``model`` is the server's :class:`DisjointModel` (warm start, spec §4.4) or
    ``DisjointModel.cold(n_arms, dim)``. Every user's statistics evolve as
    those of a ``LinUCB(layout="disjoint")`` whose ``RidgeStatistics`` was set
    to the model and refreshed: the inverse is the symmetrised Cholesky inverse
    of ``A``, then Sherman–Morrison updates with an exact refresh every
    ``refresh_every`` updates of an arm (0 = never).

    Attributes
    ----------
    A, A_inv : ndarray of shape (n_users, n_arms, dim, dim)
    b, theta : ndarray of shape (n_users, n_arms, dim)
    n_updates : ndarray of shape (n_users, n_arms)
        Updates of each arm since the start (the refresh clock).

    See :class:`BatchedAgents` for the other options.
    """

    def __init__(
        self, model: DisjointModel, n_users: int, *, refresh_every: int = DEFAULT_REFRESH_EVERY, **options
    ) -> None:
        super().__init__(n_users, model.n_arms, **options)
        self.dim, self.refresh_every = model.dim, _check_refresh(refresh_every)
        self.A, self.A_inv, self.b, self.theta = (_per_user(array, n_users) for array in _dense_start(model))
        self.n_updates = np.zeros((n_users, self.n_arms), dtype=np.int64)

    def _check_x(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if x.shape != (self.n_users, self.dim):
            raise ValueError(f"x has shape {x.shape}; expected (n_users, dim) = ({self.n_users}, {self.dim})")
        x = np.ascontiguousarray(x, dtype=np.float64)
        check_finite_array(x, "x")
        return read_only(x)

    def scores(self, x: np.ndarray) -> np.ndarray:
        return _dense_scores_all(self.A_inv, self.theta, self._check_x(x), self.alpha)

    def update(self, x: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        x = self._check_x(x)
        arms, rewards = self._check_update(arms, rewards)
        _dense_update_all(self.A, self.A_inv, self.b, self.theta, self.n_updates, x, arms, rewards, self.refresh_every)

    def user_model(self, user: int) -> DisjointModel:
        """User ``user``'s current statistics (a copy)."""
        return DisjointModel(self.A[user], self.b[user])

    def _check_run(self, contexts: np.ndarray) -> int:
        n_rounds = _check_dense_contexts(contexts, self.dim, self.n_users)
        check_finite_array(np.asarray(contexts), "contexts")
        return n_rounds

    def _run(self, contexts: np.ndarray, rewards: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
        X = read_only(np.ascontiguousarray(contexts, dtype=np.float64))
        return _dense_run(
            self.A, self.A_inv, self.b, self.theta, self.n_updates, X, rewards,
            self.alpha, self.tie_tolerance, self._random, uniforms, self.refresh_every,
        )  # fmt: skip


class BatchedCodeLinUCB(BatchedAgents):
    """Disjoint LinUCB on one-hot codes for ``n_users`` users, each from ``model``'s tables.

    Equals ``LinUCB(layout="disjoint")`` on the one-hot vectors ``e_y``
    (module docstring). The server's tables are shared and read-only; a user's
    own pulls live in slots, one per distinct code it has learnt on, so a
    user's memory grows with its rounds, not with k.

    Attributes
    ----------
    slot_codes : ndarray of shape (n_users, capacity)
        Code of each slot; a user's first ``n_slots[u]`` slots are in use.
    n_slots : ndarray of shape (n_users,)
    local_counts, local_sums : ndarray of shape (n_users, capacity, n_arms)
        The user's own pulls and reward sums per slot and arm.
    """

    def __init__(self, model: CodeModel, n_users: int, **options) -> None:
        super().__init__(n_users, model.n_arms, **options)
        self.n_codes = model.n_codes
        self._base_counts = np.ascontiguousarray(model.counts.T)  # (k, K): one code's arms are contiguous
        self._base_sums = np.ascontiguousarray(model.reward_sums.T)
        self.n_slots = np.zeros(n_users, dtype=np.int64)
        self.slot_codes = np.zeros((n_users, 0), dtype=np.int64)
        self.local_counts = np.zeros((n_users, 0, self.n_arms), dtype=np.int64)
        self.local_sums = np.zeros((n_users, 0, self.n_arms))

    def _reserve(self, new_codes: int) -> None:
        """Room for ``new_codes`` more slots per user (capacity at least doubles, at most n_codes)."""
        capacity = self.slot_codes.shape[1]
        needed = min(self.n_codes, int(self.n_slots.max()) + new_codes)
        if needed <= capacity:
            return
        capacity = min(self.n_codes, max(needed, 2 * capacity))
        for name in ("slot_codes", "local_counts", "local_sums"):
            old = getattr(self, name)
            new = np.zeros((self.n_users, capacity, *old.shape[2:]), dtype=old.dtype)
            new[:, : old.shape[1]] = old
            setattr(self, name, new)

    def _check_x(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if x.shape != (self.n_users,):
            raise ValueError(f"x has shape {x.shape}; expected (n_users,) = ({self.n_users},)")
        _check_indices(x, "codes", self.n_codes, "n_codes")
        return x.astype(np.int64)

    def scores(self, x: np.ndarray) -> np.ndarray:
        return _code_scores_all(
            self._base_counts, self._base_sums, self.slot_codes, self.n_slots,
            self.local_counts, self.local_sums, self._check_x(x), self.alpha,
        )  # fmt: skip

    def update(self, x: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        codes = self._check_x(x)
        arms, rewards = self._check_update(arms, rewards)
        self._reserve(1)
        _code_update_all(self.slot_codes, self.n_slots, self.local_counts, self.local_sums, codes, arms, rewards)

    def user_model(self, user: int) -> CodeModel:
        """User ``user``'s current tables: the server's plus its own pulls (a copy)."""
        counts, sums = self._base_counts.T.copy(), self._base_sums.T.copy()
        used = slice(0, self.n_slots[user])
        codes = self.slot_codes[user, used]
        counts[:, codes] += self.local_counts[user, used].T
        sums[:, codes] += self.local_sums[user, used].T
        return CodeModel(counts, sums)

    def _check_run(self, contexts: np.ndarray) -> int:
        return _check_codes(contexts, self.n_codes, self.n_users)

    def _run(self, contexts: np.ndarray, rewards: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
        Y = read_only(np.ascontiguousarray(contexts, dtype=np.int64))
        self._reserve(Y.shape[1])
        return _code_run(
            self._base_counts, self._base_sums, self.slot_codes, self.n_slots, self.local_counts,
            self.local_sums, Y, rewards, self.alpha, self.tie_tolerance, self._random, uniforms,
        )  # fmt: skip


def _per_user(array: np.ndarray, n_users: int) -> np.ndarray:
    """A writable copy of ``array`` for every user, shape ``(n_users, *array.shape)``."""
    return np.broadcast_to(array, (n_users, *array.shape)).copy()


def _check_dense_contexts(contexts: np.ndarray, dim: int, n_users: int | None = None) -> int:
    """Number of rounds of ``(n_users, n_rounds, dim)`` contexts, after checking the shape."""
    shape = np.shape(contexts)
    if len(shape) != 3 or shape[2] != dim or (n_users is not None and shape[0] != n_users):
        users = "n_users" if n_users is None else n_users
        raise ValueError(f"contexts has shape {shape}; expected (n_users, n_rounds, dim) = ({users}, n_rounds, {dim})")
    return shape[1]


def _check_codes(contexts: np.ndarray, n_codes: int, n_users: int | None = None) -> int:
    """Number of rounds of ``(n_users, n_rounds)`` codes in ``[0, n_codes)``, after checking them."""
    shape = np.shape(contexts)
    if len(shape) != 2 or (n_users is not None and shape[0] != n_users):
        users = "n_users" if n_users is None else n_users
        raise ValueError(
            f"contexts has shape {shape}; expected codes of shape (n_users, n_rounds) = ({users}, n_rounds)"
        )
    _check_indices(np.asarray(contexts), "codes", n_codes, "n_codes")
    return shape[1]


def batched_agents(model: DisjointModel | CodeModel, n_users: int, **options) -> BatchedAgents:
    """:class:`BatchedLinUCB` for a :class:`DisjointModel`, :class:`BatchedCodeLinUCB` for a :class:`CodeModel`."""
    if isinstance(model, DisjointModel):
        return BatchedLinUCB(model, n_users, **options)
    if isinstance(model, CodeModel):
        return BatchedCodeLinUCB(model, n_users, **options)
    raise ValueError(f"model must be a DisjointModel or a CodeModel, got {type(model).__name__}")
