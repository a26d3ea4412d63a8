"""FCLUB's baselines that never leave a local server: CLUB and per-user LinUCB (spec §6.1, §8 A17).

Each local server runs its own instance on its own users; nothing is sent, so the
communication cost is zero. CLUB (Gentile, Li & Zappella 2014) starts from the
complete user graph, deletes the served user's edges to every neighbour j with
``‖θ̂_i − θ̂_j‖ > α_CLUB (F(T_i) + F(T_j))`` after each round, and recommends from
the ridge statistics ``λI + Σ_{j∈C} V_j`` of the served user's connected
component. Per-user LinUCB (OFUL, Abbasi-Yadkori et al. 2011) is the same code on
the empty graph: every user is its own cluster. Both use the reference code's
radius ``β = scale·sqrt(2 ln(2/a) + d ln(3 + t/d))`` (§6.3; a = 0.25 for CLUB,
15 for LinUCB, scale 0.5, ridge 2), clipped at 0 where the log term is negative.
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
from privbandits.protocols.fclub import Communication, FCLUBOutcome, play
from privbandits.protocols.fclub_config import F


class LocalBaseline(StrEnum):
    """Which baseline: CLUB per local server, or LinUCB per user."""

    CLUB = "club"
    LINUCB = "linucb"


_REFERENCE_A = {LocalBaseline.CLUB: 0.25, LocalBaseline.LINUCB: 15.0}


@dataclass(frozen=True)
class BaselineConfig:
    """Options of the local baselines (defaults: the reference code's constants, §6.3).

    ``beta_a`` None takes the reference value of ``kind`` (0.25 CLUB, 15 LinUCB).
    """

    kind: LocalBaseline = LocalBaseline.CLUB
    horizon: int = 2**17 - 2
    ridge: float = 2.0
    alpha_club: float = 0.25
    beta_scale: float = 0.5
    beta_a: float | None = None
    tie_break: TieBreak = TieBreak.LOWEST

    def __post_init__(self) -> None:
        for name, enum in (("kind", LocalBaseline), ("tie_break", TieBreak)):
            try:
                object.__setattr__(self, name, enum(getattr(self, name)))
            except ValueError:
                allowed = ", ".join(repr(m.value) for m in enum)
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}") from None
        for name, ok, allowed in [
            ("horizon", self.horizon >= 1, ">= 1"),
            ("ridge", self.ridge > 0, "> 0"),
            ("alpha_club", self.alpha_club > 0, "> 0"),
            ("beta_scale", self.beta_scale >= 0, ">= 0"),
            ("beta_a", self.beta_a is None or self.beta_a > 0, "> 0 or None"),
        ]:
            if not ok:
                raise ValueError(f"{name} must be {allowed}, got {getattr(self, name)!r}")

    def beta(self, count: int, dim: int) -> float:
        """``scale·sqrt(2 ln(2/a) + d ln(3 + t/d))`` for a cluster with ``count`` samples."""
        a = self.beta_a if self.beta_a is not None else _REFERENCE_A[self.kind]
        return self.beta_scale * math.sqrt(max(0.0, 2 * math.log(2 / a) + dim * math.log(3 + count / dim)))


class _ServerClub:
    """CLUB (or, on the empty graph, per-user LinUCB) over one local server's users."""

    def __init__(self, n_users: int, dim: int, config: BaselineConfig, rng: np.random.Generator) -> None:
        self.config, self.dim, self.rng = config, dim, rng
        eye = np.eye(dim)
        self.V, self.b = np.zeros((n_users, dim, dim)), np.zeros((n_users, dim))
        self.user_inv = np.tile(eye / config.ridge, (n_users, 1, 1))
        self.user_theta = np.zeros((n_users, dim))
        self.counts = np.zeros(n_users, dtype=np.int64)
        clustering = config.kind is LocalBaseline.CLUB
        self.graph = ~np.eye(n_users, dtype=bool) if clustering else np.zeros((n_users, n_users), dtype=bool)
        self._regroup()

    def _regroup(self) -> None:
        """Connected components of the graph and their ridge statistics ``λI + Σ V_j``, ``Σ b_j``."""
        _, self.labels = connected_components(csr_matrix(self.graph), directed=False)
        n_groups = self.labels.max() + 1
        gram = np.zeros((n_groups, self.dim, self.dim))
        np.add.at(gram, self.labels, self.V)
        gram += self.config.ridge * np.eye(self.dim)
        moment = np.zeros((n_groups, self.dim))
        np.add.at(moment, self.labels, self.b)
        self.group_inv = np.linalg.inv(gram)
        self.group_theta = np.einsum("gij,gj->gi", self.group_inv, moment)
        self.group_counts = np.bincount(self.labels, weights=self.counts, minlength=n_groups).astype(np.int64)

    def recommend(self, i: int, contexts: np.ndarray) -> int:
        g = self.labels[i]
        beta = self.config.beta(int(self.group_counts[g]), self.dim)
        scores = shared_ucb_scores(contexts, self.group_inv[g], self.group_theta[g], beta)
        return break_ties(scores, self.config.tie_break, self.rng)

    def observe(self, i: int, x: np.ndarray, y: float) -> None:
        """Update the user and its cluster, then CLUB's edge deletion for the user's neighbours."""
        self.V[i] += np.outer(x, x)
        self.b[i] += y * x
        self.counts[i] += 1
        inverse_step(self.user_inv[i], self.user_theta[i], x, y, self.user_inv[i] @ x)
        g = self.labels[i]
        inverse_step(self.group_inv[g], self.group_theta[g], x, y, self.group_inv[g] @ x)
        self.group_counts[g] += 1
        neighbours = np.flatnonzero(self.graph[i])
        if neighbours.size == 0:
            return
        distance = np.linalg.norm(self.user_theta[neighbours] - self.user_theta[i], axis=1)
        width = self.config.alpha_club * (F(self.counts[i]) + F(self.counts[neighbours]))
        cut = neighbours[distance > width]
        if cut.size:
            self.graph[i, cut] = self.graph[cut, i] = False
            self._regroup()


class LocalBaselineBandit:
    """One :class:`_ServerClub` per local server; users are served by their own server only.

    Parameters
    ----------
    config : BaselineConfig
    server_of_user : ndarray of int
    dim : int
    rng : numpy.random.Generator
        Random tie-breaking.
    """

    def __init__(self, config: BaselineConfig, server_of_user: np.ndarray, dim: int, rng: np.random.Generator) -> None:
        self.config = config
        self.communication = Communication()
        self._route: list[tuple[_ServerClub, int]] = [None] * len(server_of_user)
        self.servers = []
        for ell in range(int(np.max(server_of_user)) + 1):
            users = np.flatnonzero(server_of_user == ell)
            server = _ServerClub(len(users), dim, config, rng)
            self.servers.append((users, server))
            for i, user in enumerate(users):
                self._route[user] = (server, i)
        self._user, self._contexts, self._arm = -1, None, -1

    def select(self, user: int, contexts: np.ndarray) -> int:
        server, i = self._route[user]
        self._user, self._contexts = user, contexts
        self._arm = server.recommend(i, contexts)
        return self._arm

    def update(self, reward: float) -> None:
        server, i = self._route[self._user]
        server.observe(i, self._contexts[self._arm], reward)
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
