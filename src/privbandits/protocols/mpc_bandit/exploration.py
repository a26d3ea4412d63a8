"""The learner's randomness: the dealer's exploration samples (coin, uniforms, tie-breaking permutation) and seeds.

:class:`ExplorationStream` draws one :class:`ExplorationDraw` a round, seeded on its own so the private learner
and its float64 twin see the same samples; :func:`exploration_words` turns a draw into what the dealer deals.
:class:`PrivateSeeds` are the seeds each party keeps to itself when the parties run apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from privbandits.protocols.mpc_bandit.choice import plaintext_choice
from privbandits.validation import Instance, InvalidInputError, NoneOr, describe


class ExplorationDraw(NamedTuple):
    """One round's private samples: coin y_t, uniforms v_a (grid integers k, v = k/2^L), γ (1..|A|)."""

    coin: int
    uniforms: np.ndarray
    permutation: np.ndarray


class ExplorationStream:
    """The dealer's store of exploration samples (Alg. 1 input), one draw per round.

    Seeded on its own, so the private learner (whose dealer shares the draws) and the
    plaintext twin see exactly the same coins, uniforms and tie-breaking permutations.
    """

    def __init__(self, n_arms: int, epsilon: float, precision: int, seed: np.random.SeedSequence) -> None:
        self.n_arms, self.epsilon, self.grid = n_arms, epsilon, 1 << precision
        self.rng = np.random.default_rng(seed)

    def draw(self) -> ExplorationDraw:
        rng = self.rng
        return ExplorationDraw(
            int(rng.random() < self.epsilon),
            rng.integers(0, self.grid, self.n_arms, dtype=np.uint64),
            rng.permutation(self.n_arms).astype(np.uint64) + np.uint64(1),
        )


_SEED = NoneOr(
    Instance((int, np.integer, np.random.SeedSequence), "an integer >= 0 or a numpy SeedSequence"), "fresh entropy"
)


def _seeds(seed: int | np.random.SeedSequence | None) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """(engine seed, exploration seed): the twin derives the same exploration seed."""
    if not _SEED.accepts(seed) or isinstance(seed, bool | np.bool_) or isinstance(seed, int | np.integer) and seed < 0:
        raise InvalidInputError(f"seed must be {_SEED}, got {describe(seed)}")
    sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    engine, exploration = sequence.spawn(2)
    return engine, exploration


SeedLike = int | Sequence[int] | np.random.SeedSequence


class PrivateSeeds(NamedTuple):
    """Seeds each party keeps to itself when the parties run apart (a deployment).

    ``dealer`` seeds the dealer's correlated randomness and ``exploration`` its store of
    exploration samples (coins, uniforms, permutations), both the dealer's secrets;
    ``inputs[owner]`` seeds the generator ``owner`` draws the shares of its inputs from.
    The simulator given the same seeds plays exactly as the parties' processes. A computing party in its own
    process holds neither of the dealer's seeds (None).
    """

    dealer: SeedLike | None
    exploration: SeedLike | None
    inputs: Mapping[str, SeedLike]


def _sequence(seed: SeedLike | None) -> np.random.SeedSequence:
    return seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)


def exploration_words(draw: ExplorationDraw, precision: int, dealt: bool = False) -> dict[str, np.ndarray | np.uint64]:
    """The dealer's secrets of one round, by dealer kind: the coin y_t, the uniforms v_a at the
    scores' 2L fractional bits, the tie-breaking permutation γ, and with ``dealt`` (``dealt_exploration``)
    the one-hot of the arm exploration picks times y_t and the factor 1 − y_t."""
    words: dict[str, np.ndarray | np.uint64] = {
        "bernoulli": np.uint64(draw.coin),
        "uniform": draw.uniforms * np.uint64(1 << precision),
        "permutation": draw.permutation,
    }
    if dealt:
        explored = plaintext_choice(np.zeros(len(draw.uniforms)), 1, draw.uniforms, draw.permutation)
        words["exploring_arm"] = (np.arange(len(draw.uniforms)) == explored).astype(np.uint64) * np.uint64(draw.coin)
        words["exploiting"] = np.uint64(1 - draw.coin)
    return words
