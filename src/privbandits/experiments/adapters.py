"""Learner adapters: every protocol behind one contract, so the runner keeps one loop.

The runner's loop calls ``select(round) -> arm`` and, when the round counts,
``update(round, arm, reward)``; the protocols' own call shapes differ, and these
small classes translate:

* :class:`PolicyLearner`: plaintext and vertical policies, ``select(contexts)`` and
  ``update(contexts, arm, reward)``, optionally on the first ``visible`` features
  (a partial baseline such as the active party alone);
* :class:`UserLearner`: FCLUB and its local baselines, ``select(user, contexts)`` and
  ``update(reward)``;
* :class:`StepLearner`: the MPC ε-greedy learners, whose ``step(contexts, pull)``
  chooses, pulls and learns in one call (the private argmax opens the arm only to the
  puller, and the rewarder inputs the reward inside the same protocol round).

Each also reports ``metrics()``: scalar outcomes a protocol measures besides
rewards (communication counts, privacy accounting), stored with the run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from privbandits.experiments.sources import Round


class PolicyLearner:
    """A :class:`~privbandits.linear.policies.Policy` (or vertical protocol) on the round's contexts."""

    def __init__(self, policy, visible: int | None = None) -> None:
        self.policy, self.visible = policy, visible

    def _seen(self, contexts: np.ndarray) -> np.ndarray:
        return contexts if self.visible is None else contexts[..., : self.visible]

    def select(self, round: Round) -> int:
        return self.policy.select(self._seen(round.contexts))

    def update(self, round: Round, arm: int, reward: float) -> None:
        self.policy.update(self._seen(round.contexts), arm, reward)

    @property
    def traffic(self):
        return getattr(self.policy, "traffic", None)

    def metrics(self) -> dict[str, float]:
        """The policy's ``privacy_metrics()`` where it has them (the DP baselines), else nothing."""
        report = getattr(self.policy, "privacy_metrics", None)
        return {} if report is None else report()


class UserLearner:
    """A clustered-users protocol (FCLUB, CLUB, SCLUB, per-user LinUCB): the round's user and items."""

    def __init__(self, bandit) -> None:
        self.policy = bandit

    def select(self, round: Round) -> int:
        return self.policy.select(round.user, round.contexts)

    def update(self, round: Round, arm: int, reward: float) -> None:
        self.policy.update(reward)

    @property
    def traffic(self):
        return None  # reported by metrics(): FCLUB's phases are not the setup/round split of the summary

    def metrics(self) -> dict[str, float]:
        bandit = self.policy
        counts = bandit.communication
        metrics: dict[str, float] = {
            "communication": counts.total,
            "uploads": counts.uploads + counts.phase_uploads,
            "downloads": counts.downloads + counts.renewals,
            "clusters": len(bandit.partition()),
        }
        network = getattr(bandit, "network", None)
        if network is not None:
            total = network.traffic.total()
            metrics |= {"bytes": total.bytes, "messages": total.messages}
        if hasattr(bandit, "privacy_report") and bandit.config.private:
            report = bandit.privacy_report()
            metrics |= {
                "claimed_epsilon": report.claimed_epsilon,
                "accounted_epsilon_per_datum": report.accounted_epsilon_per_datum,
            } | bandit.bounds.metrics()
        return metrics


class StepLearner:
    """An MPC ε-greedy learner whose ``step(contexts, pull)`` chooses, pulls and learns in one call."""

    def __init__(self, learner, pull: Callable[[int], float]) -> None:
        self.policy, self.pull = learner, pull

    def select(self, round: Round) -> int:
        return self.policy.step(round.contexts, self.pull)

    def update(self, round: Round, arm: int, reward: float) -> None:
        """Nothing left to do: the step has learned from the reward it pulled."""

    @property
    def traffic(self):
        engine = getattr(self.policy, "engine", None)
        return None if engine is None else engine.traffic

    def metrics(self) -> dict[str, float]:
        metrics: dict[str, Any] = {}
        if hasattr(self.policy, "invalid_openings"):
            metrics["invalid_openings"] = self.policy.invalid_openings
            metrics["privacy_loss_per_action"] = self.policy.config.privacy_loss
        return metrics
