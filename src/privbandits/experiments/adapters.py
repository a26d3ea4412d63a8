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
rewards (communication counts, privacy accounting), stored with the run; a learner that
measures its privacy says so by being a :class:`PrivateLearner` (its ``privacy_metrics()``), and one whose
parties exchange messages by being a :class:`NetworkedLearner` (its ``traffic``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from privbandits.comm import Traffic
from privbandits.experiments.sources import Round


@runtime_checkable
class PrivateLearner(Protocol):
    """A learner that measures what its privacy costs: the DP LinUCB baselines
    (:class:`~privbandits.protocols.dp.base.PrivateLinUCB`), FCLUB
    (:class:`~privbandits.protocols.fclub.driver.FederatedClusteredBandit`) and the private MPC ε-greedy learner
    (:class:`~privbandits.protocols.mpc_bandit.PrivateEpsilonGreedy`)."""

    def privacy_metrics(self) -> dict[str, float]:
        """Scalars a run stores besides its rewards: privacy accounting (and the messages it took, where the
        learner's parties exchange them)."""
        ...


@runtime_checkable
class NetworkedLearner(Protocol):
    """A learner whose parties exchange messages (the vertical protocol, the private MPC learner): the run reports
    its setup and round traffic."""

    @property
    def traffic(self) -> Traffic:
        """The ledger of the messages its parties sent."""
        ...


class Learner(Protocol):
    """What the runner's loop drives: one of the adapters below, or a policy kind's own."""

    policy: Any
    """The learner behind the adapter (its ``theta``, where it has one, is the run's estimate series)."""

    def select(self, round: Round) -> int:
        """The arm of ``round``."""
        ...

    def update(self, round: Round, arm: int, reward: float) -> None:
        """Learn ``reward`` of ``arm`` in ``round`` (called only for rounds that count)."""
        ...

    @property
    def traffic(self) -> Traffic | None:
        """The messages its parties sent (None for a learner without parties)."""
        ...

    def metrics(self) -> dict[str, float]:
        """Scalars the run stores besides its rewards."""
        ...


def traffic_of(learner: object) -> Traffic | None:
    """``learner.traffic`` for a :class:`NetworkedLearner`; None for any other learner."""
    return learner.traffic if isinstance(learner, NetworkedLearner) else None


def private_metrics(learner: object) -> dict[str, float]:
    """``learner.privacy_metrics()`` for a :class:`PrivateLearner`; nothing for any other learner."""
    return learner.privacy_metrics() if isinstance(learner, PrivateLearner) else {}


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
    def traffic(self) -> Traffic | None:
        return traffic_of(self.policy)

    def metrics(self) -> dict[str, float]:
        """The policy's privacy metrics where it is a :class:`PrivateLearner` (the DP baselines), else nothing."""
        return private_metrics(self.policy)


class UserLearner:
    """A clustered-users protocol (FCLUB, CLUB, SCLUB, per-user LinUCB): the round's user and items."""

    def __init__(self, bandit) -> None:
        self.policy = bandit

    def select(self, round: Round) -> int:
        return self.policy.select(round.user, round.contexts)

    def update(self, round: Round, arm: int, reward: float) -> None:
        self.policy.update(reward)

    @property
    def traffic(self) -> Traffic | None:
        return None  # reported by metrics(): FCLUB's phases are not the setup/round split of the summary

    def metrics(self) -> dict[str, float]:
        """The uploads, downloads and clusters of every such protocol; then FCLUB's :class:`PrivateLearner`
        metrics (its messages, and its privacy accounting when private)."""
        bandit = self.policy
        counts = bandit.communication
        metrics: dict[str, float] = {
            "communication": counts.total,
            "uploads": counts.uploads + counts.phase_uploads,
            "downloads": counts.downloads + counts.renewals,
            "clusters": len(bandit.partition()),
        }
        return metrics | private_metrics(bandit)


class StepLearner:
    """An MPC ε-greedy learner whose ``step(contexts, pull)`` chooses, pulls and learns in one call."""

    def __init__(self, learner, pull: Callable[[int], float]) -> None:
        self.policy, self.pull = learner, pull

    def select(self, round: Round) -> int:
        return self.policy.step(round.contexts, self.pull)

    def update(self, round: Round, arm: int, reward: float) -> None:
        """Nothing left to do: the step has learned from the reward it pulled."""

    @property
    def traffic(self) -> Traffic | None:
        return traffic_of(self.policy)

    def metrics(self) -> dict[str, float]:
        """The private learner's openings and privacy loss (:class:`PrivateLearner`); nothing for its twin."""
        return private_metrics(self.policy)
