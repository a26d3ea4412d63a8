"""FCLUB's baselines that never leave a local server: CLUB, SCLUB and per-user LinUCB (spec §6.1, §8 A17).

Each local server runs its own instance on its own users; nothing is sent, so the
communication cost is zero. All three recommend from the ridge statistics
``λI + Σ_{j∈C} V_j``, ``Σ_{j∈C} b_j`` of the served user's cluster C and differ
only in how clusters change after a round:

CLUB (Gentile, Li & Zappella 2014)
    starts from the complete user graph and deletes the served user's edges to
    every neighbour j with ``‖θ̂_i − θ̂_j‖ > α_CLUB (F(T_i) + F(T_j))``; clusters are
    the connected components.
Per-user LinUCB (OFUL, Abbasi-Yadkori et al. 2011)
    is the same code on the empty graph: every user is its own cluster.
SCLUB (Li, Chen & Leung 2019, Alg. 1)
    keeps clusters as sets, in stages of 2^s rounds starting at t = 2^s − 1 (the
    phases of FCLUB, §3.2). At a stage start every user becomes unchecked and
    each cluster V stores ``(T̃_V, θ̃_V)``. The first time user i is served in a
    stage it is *split* from its cluster V into a cluster of its own if
    ``‖θ̂_i − θ̃_V‖ > α (F(T_i) + F(T̃_V))`` or ``|p̂_i − p̂_j| > 2 α_p F(t)`` for some
    j ∈ V (``p̂ = T/t``, the arrival frequency), and is then checked. After every
    round two clusters whose users are all checked are *merged* if
    ``‖θ̂_V1 − θ̂_V2‖ < α/2 (F(T_V1) + F(T_V2))`` and ``|p̂_V1 − p̂_V2| < α_p F(t)``
    with ``p̂_V = T_V/(|V| t)``. The reference code tests the split at every
    arrival, not only at the first one of a stage.

All use the reference code's radius ``β = scale·sqrt(2 ln(2/a) + d ln(3 + t/d))``
(§6.3; a = 0.25 for CLUB, 1.5 for SCLUB, 15 for LinUCB, scale 0.5, ridge 2),
clipped at 0 where the log term is negative, and its clustering constants
(α_CLUB = 0.25; SCLUB α = 1.5, α_p = 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from privbandits.envs.clustered import ClusteredLinearBandit, assign_groups
from privbandits.linear._kernels import inverse_step, shared_ucb_scores
from privbandits.linear.tiebreak import TieBreak, break_ties
from privbandits.options import check_fields, option
from privbandits.protocols.fclub.accounting import Communication
from privbandits.protocols.fclub.config import F
from privbandits.protocols.fclub.rounds import FCLUBOutcome, RoundChecks, check_server_of_user, play
from privbandits.validation import Choice, Instance, Integer, InvalidInputError, NoneOr, Real, check, describe


class LocalBaseline(StrEnum):
    """Which baseline: CLUB or SCLUB per local server, or LinUCB per user."""

    CLUB = "club"
    SCLUB = "sclub"
    LINUCB = "linucb"


_REFERENCE_A = {LocalBaseline.CLUB: 0.25, LocalBaseline.SCLUB: 1.5, LocalBaseline.LINUCB: 15.0}


_POSITIVE = Real(low=0, low_open=True)


@dataclass(frozen=True)
class BaselineConfig:
    """Options of the local baselines (defaults: the reference code's constants, §6.3).

    ``beta_a`` None takes the reference value of ``kind`` (0.25 CLUB, 1.5 SCLUB, 15 LinUCB);
    ``alpha_sclub`` and ``alpha_frequency`` are SCLUB's α and α_p.
    """

    kind: LocalBaseline = option(Choice(LocalBaseline), LocalBaseline.CLUB, "the baseline: CLUB, SCLUB or LinUCB")
    horizon: int = option(Integer(low=1), 2**17 - 2, "T, the number of rounds")
    ridge: float = option(_POSITIVE, 2.0, "λ, the ridge regulariser")
    alpha_club: float = option(_POSITIVE, 0.25, "α_CLUB of the edge deletion")
    alpha_sclub: float = option(_POSITIVE, 1.5, "SCLUB's α")
    alpha_frequency: float = option(_POSITIVE, 1.0, "SCLUB's α_p of the frequency test")
    beta_scale: float = option(Real(low=0), 0.5, "multiplier of the confidence radius β")
    beta_a: float | None = option(
        NoneOr(_POSITIVE, "the reference value of kind"), None, "a in β = scale·√(2 ln(2/a) + d ln(3 + t/d))"
    )
    tie_break: TieBreak = option(Choice(TieBreak), TieBreak.LOWEST, "rule among tied arms")

    def __post_init__(self) -> None:
        check_fields(self, choices=True)

    def beta(self, count: int, dim: int) -> float:
        """``scale·sqrt(2 ln(2/a) + d ln(3 + t/d))`` for a cluster with ``count`` samples."""
        a = self.beta_a if self.beta_a is not None else _REFERENCE_A[self.kind]
        return self.beta_scale * math.sqrt(max(0.0, 2 * math.log(2 / a) + dim * math.log(3 + count / dim)))


class _ServerClusters:
    """One local server's users, their ridge estimates, and clusters given by ``labels`` (0..G−1)."""

    def __init__(self, n_users: int, dim: int, config: BaselineConfig, rng: np.random.Generator) -> None:
        self.config, self.dim, self.rng = config, dim, rng
        eye = np.eye(dim)
        self.V, self.b = np.zeros((n_users, dim, dim)), np.zeros((n_users, dim))
        self.user_inv = np.tile(eye / config.ridge, (n_users, 1, 1))
        self.user_theta = np.zeros((n_users, dim))
        self.counts = np.zeros(n_users, dtype=np.int64)

    def _pool(self, labels: np.ndarray) -> None:
        """Take ``labels`` as the clusters and pool their ridge statistics ``λI + Σ V_j``, ``Σ b_j``."""
        self.labels = labels
        n_groups = labels.max() + 1
        gram = np.zeros((n_groups, self.dim, self.dim))
        np.add.at(gram, labels, self.V)
        gram += self.config.ridge * np.eye(self.dim)
        moment = np.zeros((n_groups, self.dim))
        np.add.at(moment, labels, self.b)
        self.group_inv = np.linalg.inv(gram)
        self.group_theta = np.einsum("gij,gj->gi", self.group_inv, moment)
        self.group_counts = np.bincount(labels, weights=self.counts, minlength=n_groups).astype(np.int64)

    def recommend(self, i: int, contexts: np.ndarray) -> int:
        g = self.labels[i]
        beta = self.config.beta(int(self.group_counts[g]), self.dim)
        scores = shared_ucb_scores(contexts, self.group_inv[g], self.group_theta[g], beta)
        return break_ties(scores, self.config.tie_break, self.rng)

    def observe(self, i: int, x: np.ndarray, y: float, t: int) -> None:
        """Update user ``i`` and its cluster with round ``t``'s observation, then re-cluster."""
        self.V[i] += np.outer(x, x)
        self.b[i] += y * x
        self.counts[i] += 1
        inverse_step(self.user_inv[i], self.user_theta[i], x, y, self.user_inv[i] @ x)
        g = self.labels[i]
        inverse_step(self.group_inv[g], self.group_theta[g], x, y, self.group_inv[g] @ x)
        self.group_counts[g] += 1
        self._recluster(i, t)

    def _recluster(self, i: int, t: int) -> None:
        raise NotImplementedError


class _ServerClub(_ServerClusters):
    """CLUB over one local server's users (per-user LinUCB on the empty graph)."""

    def __init__(self, n_users: int, dim: int, config: BaselineConfig, rng: np.random.Generator) -> None:
        super().__init__(n_users, dim, config, rng)
        clustering = config.kind is LocalBaseline.CLUB
        self.graph = ~np.eye(n_users, dtype=bool) if clustering else np.zeros((n_users, n_users), dtype=bool)
        self._regroup()

    def _regroup(self) -> None:
        self._pool(connected_components(csr_matrix(self.graph), directed=False)[1])

    def _recluster(self, i: int, t: int) -> None:
        """CLUB's edge deletion for the served user's neighbours."""
        neighbours = np.flatnonzero(self.graph[i])
        if neighbours.size == 0:
            return
        distance = np.linalg.norm(self.user_theta[neighbours] - self.user_theta[i], axis=1)
        width = self.config.alpha_club * (F(self.counts[i]) + F(self.counts[neighbours]))
        cut = neighbours[distance > width]
        if cut.size:
            self.graph[i, cut] = self.graph[cut, i] = False
            self._regroup()


class _ServerSclub(_ServerClusters):
    """SCLUB over one local server's users: stage-wise split of unchecked users, merge of checked clusters."""

    def __init__(self, n_users: int, dim: int, config: BaselineConfig, rng: np.random.Generator) -> None:
        super().__init__(n_users, dim, config, rng)
        self._pool(np.zeros(n_users, dtype=np.int64))
        self.checked = np.zeros(n_users, dtype=bool)
        self.stage_counts, self.stage_theta = self.group_counts.copy(), self.group_theta.copy()
        self.stage_starts: list[int] = []
        self._next_stage = 1

    def _recluster(self, i: int, t: int) -> None:
        if t >= self._next_stage:  # stage s starts at t = 2^s − 1: uncheck everyone, snapshot (T̃, θ̃)
            self.stage_starts.append(self._next_stage)
            self._next_stage = 2 * self._next_stage + 1
            self.checked[:] = False
            self.stage_counts, self.stage_theta = self.group_counts.copy(), self.group_theta.copy()
        if not self.checked[i]:
            self.checked[i] = True
            self._split(i, t)
        self._merge(t)

    def _split(self, i: int, t: int) -> None:
        cfg, g = self.config, self.labels[i]
        members = np.flatnonzero(self.labels == g)
        if members.size == 1:
            return
        far = np.linalg.norm(self.user_theta[i] - self.stage_theta[g])
        far = far > cfg.alpha_sclub * (F(self.counts[i]) + F(self.stage_counts[g]))
        frequency = np.abs(self.counts[members] - self.counts[i]).max() / t > 2 * cfg.alpha_frequency * F(t)
        if far or frequency:
            labels = self.labels.copy()
            labels[i] = labels.max() + 1  # the new cluster inherits its stage snapshot
            self.stage_counts = np.append(self.stage_counts, self.stage_counts[g])
            self.stage_theta = np.vstack([self.stage_theta, self.stage_theta[g]])
            self._pool(labels)

    def _merge(self, t: int) -> None:
        """Merge the first pair of checked clusters that passes both tests, until none does."""
        cfg = self.config
        while True:
            n_groups = self.labels.max() + 1
            if n_groups == 1:
                return
            sizes = np.bincount(self.labels, minlength=n_groups)
            done = np.bincount(self.labels, weights=self.checked, minlength=n_groups) == sizes
            width = F(self.group_counts) * cfg.alpha_sclub / 2
            distance = np.linalg.norm(self.group_theta[:, None] - self.group_theta[None], axis=-1)
            frequency = self.group_counts / (sizes * t)
            close = (distance < width[:, None] + width[None]) & (
                np.abs(frequency[:, None] - frequency[None]) < cfg.alpha_frequency * F(t)
            )
            close &= done[:, None] & done[None] & np.triu(np.ones((n_groups, n_groups), dtype=bool), 1)
            pairs = np.argwhere(close)
            if pairs.size == 0:
                return
            keep, gone = pairs[0]
            labels = np.where(self.labels == gone, keep, self.labels)
            labels[labels > gone] -= 1
            self.stage_counts = np.delete(self.stage_counts, gone)
            self.stage_theta = np.delete(self.stage_theta, gone, axis=0)
            self._pool(labels)


class LocalBaselineBandit(RoundChecks):
    """One CLUB / SCLUB / per-user LinUCB instance per local server; users are served by their own server only.

    Parameters
    ----------
    config : BaselineConfig
    server_of_user : ndarray of int
    dim : int
    rng : numpy.random.Generator
        Random tie-breaking.
    """

    def __init__(self, config: BaselineConfig, server_of_user: np.ndarray, dim: int, rng: np.random.Generator) -> None:
        owner = "LocalBaselineBandit"
        check(config, "config", Instance((BaselineConfig,)), owner)
        dim = check(dim, "dim", Integer(low=1), owner)
        check(rng, "rng", Instance((np.random.Generator,), "a numpy Generator"), owner)
        server_of_user = check_server_of_user(server_of_user, owner)
        self.config = config
        self._n_users, self._shape = len(server_of_user), None
        self.communication = Communication()
        route: dict[int, tuple[_ServerClusters, int]] = {}
        self.servers = []
        kind = _ServerSclub if config.kind is LocalBaseline.SCLUB else _ServerClub
        for ell in range(int(np.max(server_of_user)) + 1):
            users = np.flatnonzero(server_of_user == ell)
            server = kind(len(users), dim, config, rng)
            self.servers.append((users, server))
            for i, user in enumerate(users.tolist()):
                route[user] = (server, i)
        self._route = [route[user] for user in range(len(server_of_user))]
        self.t = 0
        self._user, self._contexts, self._arm = -1, None, -1

    def select(self, user: int, contexts: np.ndarray) -> int:
        """Arm for ``user`` (in ``[0, n_users)``) on finite contexts of shape ``(n_arms, dim)``; n_arms is
        fixed by the first call."""
        if self._shape is None:  # the first round fixes n_arms (kept only if the round is accepted)
            dim = self.servers[0][1].dim
            if getattr(contexts, "ndim", 0) != 2 or not len(contexts):
                shape = getattr(contexts, "shape", None)
                raise InvalidInputError(
                    f"contexts must be a float array of shape (n_arms, dim) = (n_arms >= 1, {dim}), got "
                    f"{f'shape {shape}' if shape is not None else describe(contexts)}"
                )
            self._shape = (len(contexts), dim)
            try:
                user, contexts = self._check_select(user, contexts)
            except InvalidInputError:
                self._shape = None
                raise
        elif not self._passes(user, contexts):
            user, contexts = self._check_select(user, contexts)
        server, i = self._route[user]
        self._arm = arm = self._recommend(server, i, contexts)
        self.t += 1
        self._user, self._contexts = user, contexts
        return arm

    def update(self, reward: float) -> None:
        """Once per :meth:`select`, with a finite reward."""
        if self._contexts is None or not (isinstance(reward, float) and math.isfinite(reward)):
            reward = self._check_update(reward)
        assert self._contexts is not None, "_check_update refuses an update without a selection"
        server, i = self._route[self._user]
        x, self._contexts = self._contexts[self._arm], None
        server.observe(i, x, reward, self.t)
        self.communication.rounds += 1

    def partition(self) -> frozenset[frozenset[int]]:
        """Each server's clusters as sets of user ids."""
        return frozenset(
            frozenset(int(u) for u in users[server.labels == g])
            for users, server in self.servers
            for g in range(server.labels.max() + 1)
        )


def run_baseline(config: BaselineConfig, env: ClusteredLinearBandit, n_servers: int, seed: int) -> FCLUBOutcome:
    """Play ``config.horizon`` rounds with the same seeds and server blocks as :func:`run_fclub`."""
    env_rng, rng = np.random.default_rng(seed).spawn(2)
    env.reset(env_rng)
    servers = assign_groups(env.n_users, n_servers, remainder_last=True)
    return play(LocalBaselineBandit(config, servers, env.dim, rng), env, config.horizon)
