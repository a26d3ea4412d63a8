"""The interface every bandit problem implements.

A round is drawn with :meth:`Environment.next_round`; it returns the contexts
the learner sees and the expected reward of every arm (for pseudo-regret). The
learner's chosen arm is then scored by :meth:`Environment.reward`. Environments
draw all randomness from the generator given to :meth:`Environment.reset`, and
draw the same random numbers whatever arm is chosen, so two policies run with
the same seed face exactly the same problem.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import StrEnum
from typing import NamedTuple

import numpy as np

from privbandits.validation import CallOrderError, InvalidInputError, check_arm, check_finite_array, describe


class ContextKind(StrEnum):
    """Shape of a round's contexts.

    PER_ARM
        ``(n_arms, dim)``: one context per arm (user and item features).
    SHARED
        ``(dim,)``: one context for all arms (disjoint per-arm models).
    """

    PER_ARM = "per_arm"
    SHARED = "shared"


class BanditRound(NamedTuple):
    """What one round offers: contexts and the (hidden) expected arm rewards."""

    contexts: np.ndarray
    expected_rewards: np.ndarray


class Environment(ABC):
    """A stochastic contextual bandit problem.

    Attributes
    ----------
    n_arms : int
    dim : int
    context_kind : ContextKind
    """

    n_arms: int
    dim: int
    context_kind: ContextKind

    @abstractmethod
    def reset(self, rng: np.random.Generator) -> None:
        """Draw the problem instance (e.g. θ*) and restart the round stream."""

    @abstractmethod
    def next_round(self) -> BanditRound:
        """Advance to the next round and return its contexts and expected rewards."""

    @abstractmethod
    def reward(self, arm: int) -> float:
        """Realised reward of ``arm`` in the current round."""

    def describe(self) -> str:
        """One line for listings and reports."""
        return f"{type(self).__name__}(n_arms={self.n_arms}, dim={self.dim})"

    # -- checks shared by the environments: a refused call changes nothing --------------------------------
    _in_round = False
    """True from :meth:`next_round` until the next :meth:`reset`: :meth:`reward` has a round to score."""

    def _checked_rng(self, rng: object) -> np.random.Generator:
        """``reset``'s generator; a seed or anything else is refused, naming it."""
        if not isinstance(rng, np.random.Generator):
            raise InvalidInputError(
                f"{type(self).__name__}.reset: rng must be a numpy Generator (np.random.default_rng(seed)), "
                f"got {describe(rng)}"
            )
        self._in_round = False
        return rng

    def _checked_arm(self, arm: object) -> int:
        """``reward``'s arm: an integer in ``[0, n_arms)``, once a round has been drawn."""
        if not self._in_round:
            raise CallOrderError(
                f"{type(self).__name__}.reward scores the current round: call reset(rng), then next_round(), first"
            )
        return check_arm(arm, self.n_arms)


def real_matrix(values: object, name: str, owner: str) -> np.ndarray:
    """``values`` as a non-empty 2-D float64 array of finite reals (complex, NaN and inf refused, naming them)."""
    raw = np.asarray(values)
    if raw.ndim != 2 or raw.shape[0] == 0:
        raise InvalidInputError(f"{name} must be a non-empty 2-D array, got shape {raw.shape}")
    check_finite_array(raw, f"{owner}: {name}")
    return raw.astype(np.float64)
