"""The reference :class:`~privbandits.serve.decider.Decider`: an in-process plaintext learner, no privacy.

It serves :class:`~privbandits.linear.policies.LinUCB` or :class:`~privbandits.linear.policies.EpsilonGreedy` as
they are, for the tests, for trying the API, and as the template a protocol's serving role follows: the caller's
features go into the event's state (kept at this party, in its store) and come back with the reward; the learner's
state is its ridge statistics, checkpointed as exact float64 bytes.

Decisions equal the library policy's for the same generator: LinUCB picks the best upper confidence bound (ties to
the lowest arm; deterministic, so no propensity); ε-greedy draws its coin, then a uniform arm when exploring, else
the greedy arm, and reports the chosen arm's propensity ``(1 - ε)·[arm is greedy] + ε/|candidates|``.

Per-user budgets (``user_budget_epsilon``, :mod:`privbandits.serve.budget`) charge the release a decider's decision
makes of its user's data. The reference makes none, so it can be given one to charge for trying budgets:
``charged_std`` charges each decision as a Gaussian release of that σ at sensitivity 1 (nothing is added to the
plaintext learner: a protocol's decider charges the release it really makes).
"""

from __future__ import annotations

import hashlib
import io
import json
from enum import StrEnum
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from privbandits.linear.policies import EpsilonGreedy, Layout, LinUCB
from privbandits.linear.tiebreak import TieBreak, break_ties
from privbandits.privacy.accountant import Release
from privbandits.serve.decider import (
    DecidedEvent,
    DecideInput,
    Decider,
    Decision,
    JsonObject,
    Refused,
    candidate_arms,
)

# The complete state of RidgeStatistics: its Gram block, pending rows, inverses, b, θ and counters.
_RIDGE_ARRAYS = ("_gram", "_pending", "_n_pending", "A_inv", "b", "theta", "n_updates")


class PolicyName(StrEnum):
    """The plaintext policies the reference service can serve."""

    LINUCB = "linucb"
    EPSILON_GREEDY = "epsilon-greedy"


class ReferenceLearner(BaseModel):
    """The ``[learner]`` table of a reference service file: the policy and its options."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: PolicyName = Field(PolicyName.LINUCB, description="linucb or epsilon-greedy")
    n_arms: int = Field(ge=1, le=10_000, description="K, the number of arms")
    dim: int = Field(ge=1, le=10_000, description="d, the number of features per row")
    layout: Layout = Field(Layout.SHARED, description="shared: one θ, a row per arm; disjoint: one model per arm")
    alpha: float = Field(1.0, ge=0, le=1e6, description="LinUCB: weight of the confidence width")
    epsilon: float = Field(0.1, ge=0, le=1, description="ε-greedy: probability of a uniform arm")
    reg: float = Field(1.0, gt=0, le=1e6, description="ridge regulariser λ")
    seed: int | None = Field(
        None, ge=0, description="seed of the policy's coins (tests and demos only); none: OS entropy"
    )
    charged_std: float | None = Field(
        None, gt=0, le=1e6, description="development: each decision is charged to its user's budget as a Gaussian "
        "release of this σ at sensitivity 1 (the reference adds no noise; none: it releases nothing per user)"
    )


class ReferenceDecider(Decider):
    """A :class:`Decider` over one plaintext policy (see the module docstring)."""

    def __init__(self, learner: ReferenceLearner) -> None:
        self.learner = learner
        self.kind = f"reference-{learner.policy}"
        common: dict[str, Any] = {"layout": learner.layout, "reg": learner.reg, "rng": learner.seed}
        common["tie_break"] = TieBreak.LOWEST
        if learner.policy is PolicyName.LINUCB:
            self.policy: LinUCB | EpsilonGreedy = LinUCB(learner.n_arms, learner.dim, alpha=learner.alpha, **common)
        else:
            self.policy = EpsilonGreedy(learner.n_arms, learner.dim, epsilon=learner.epsilon, **common)

    def identity(self) -> str:
        unset = {"charged_std"} if self.learner.charged_std is None else set()  # stores from before it still open
        settings = self.learner.model_dump(mode="json", exclude={"seed"} | unset)
        return "reference:" + hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()

    # -- deciding ------------------------------------------------------------
    def user_release(self) -> Release | None:
        """The charge ``charged_std`` declares (a development aid: the reference is plaintext), or None."""
        std = self.learner.charged_std
        return None if std is None else Release.gaussian(std, 1.0)

    def _contexts(self, features: np.ndarray) -> np.ndarray:
        """The policy's contexts from the request's rows, or :class:`Refused` naming ``features``."""
        n_arms, dim = self.learner.n_arms, self.learner.dim
        rows, width = features.shape
        if width != dim:
            raise Refused("features", f"rows must have {dim} numbers (dim), got {width}")
        if rows == n_arms:
            return features
        if rows == 1 and self.learner.layout is Layout.DISJOINT:
            return features[0]
        allowed = f"{n_arms} rows (one per arm)" + (" or 1 row" if self.learner.layout is Layout.DISJOINT else "")
        raise Refused("features", f"must have {allowed}, got {rows}")

    def _candidates(self, arms: tuple[int, ...] | None) -> np.ndarray:
        return candidate_arms(arms, self.learner.n_arms)

    def _best(self, scores: np.ndarray, candidates: np.ndarray) -> int:
        """The best candidate (ties to the lowest score index among the candidates), or :class:`Refused`."""
        try:
            return int(candidates[break_ties(scores[candidates], TieBreak.LOWEST)])
        except ValueError as exc:
            raise Refused("features", f"arm scores are not finite ({exc})") from None

    def decide(self, request: DecideInput) -> Decision:
        contexts = self._contexts(request.features)
        candidates = self._candidates(request.arms)
        if np.abs(request.features).max() > 1e150:
            raise Refused("features", "must be at most 1e150 in absolute value (larger ones overflow the scores)")
        policy = self.policy
        if isinstance(policy, LinUCB):
            arm, propensity = self._best(policy.scores(contexts), candidates), None
        else:
            greedy = self._best(policy.estimates(contexts), candidates)  # before the coin: a refusal draws nothing
            epsilon = policy.epsilon
            explore = policy.rng.random() < epsilon
            arm = int(candidates[policy.rng.integers(candidates.size)]) if explore else greedy
            propensity = (1.0 - epsilon) * (arm == greedy) + epsilon / candidates.size
        state: JsonObject = {"features": request.features.tolist()}
        return Decision(arm, propensity, self.model_version, state)

    # -- learning ------------------------------------------------------------
    def absorb(self, event: DecidedEvent, reward: float) -> None:
        contexts = self._contexts(np.asarray(event.event_state["features"], dtype=np.float64))
        self.policy.update(contexts, event.arm, reward)

    @property
    def model_version(self) -> int:
        return int(self.policy.stats.n_updates.sum())

    def ledger(self) -> JsonObject:
        return {
            "privacy": "none: the reference learner is plaintext (no protocol, no noise)",
            "epsilon": 0.0,
            "delta": 0.0,
            "rewards_absorbed": self.model_version,
        }

    # -- state ---------------------------------------------------------------
    def checkpoint(self) -> bytes:
        stats = self.policy.stats
        buffer = io.BytesIO()
        np.savez(buffer, **{name: getattr(stats, name) for name in _RIDGE_ARRAYS})
        return buffer.getvalue()

    def restore(self, state: bytes) -> None:
        stats = self.policy.stats
        with np.load(io.BytesIO(state), allow_pickle=False) as saved:
            arrays = {name: saved[name] for name in _RIDGE_ARRAYS if name in saved.files}
        for name in _RIDGE_ARRAYS:  # check every array before changing any
            current = getattr(stats, name)
            if name not in arrays or arrays[name].shape != current.shape or arrays[name].dtype != current.dtype:
                raise ValueError(f"checkpoint does not fit the learner: {name} missing or of another shape")
        for name in _RIDGE_ARRAYS:
            getattr(stats, name)[...] = arrays[name]  # in place: the compiled kernels hold the arrays
