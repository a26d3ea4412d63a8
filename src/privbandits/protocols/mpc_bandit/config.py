"""The private ε-greedy learner's settings (:class:`MPCBanditConfig`) and the inputs they accept.

The configuration declares each field (:func:`~privbandits.options.option`) and checks the rules that tie
them together (:mod:`.rules`); its results-store key is the experiments layer's
(:func:`~privbandits.experiments.later_options.mpc_store_params`). :func:`_check_context` and
:func:`_check_reward` refuse a context or a reward the fixed point cannot carry, for the private learner and
its twin alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np

from privbandits.mpc.approximations import NR_ITERATIONS, RECIPROCAL_STARTS
from privbandits.mpc.truncation import TRUNCATION_MODES, TRUNCATION_ROUNDINGS
from privbandits.options import check_fields, option
from privbandits.privacy import epsilon_greedy
from privbandits.protocols.mpc_bandit.rules import (
    dealt_exploration_problem,
    lookup_comparison_problem,
    mask_factors_problem,
    overlap_problem,
)
from privbandits.validation import (
    Boolean,
    Choice,
    Integer,
    IntegerSequence,
    InvalidInputError,
    Real,
    Text,
    check_finite_array,
    describe,
)

MAX_PRECISION = 26
"""Scores are compared at 2L fractional bits inside the 62-bit range of an exact comparison."""

MASK_ENCODINGS = ("integer", "fixed_point")
TRUNCATIONS = ("auto", *TRUNCATION_MODES)

_PHRASE = "{name} must be {constraint}, got {value}"
_BOUNDS = "{name} must be {bounds}, got {value}"
_PARTY = Text(min_length=1, label="a non-empty party name")


def _one_of(values: tuple[str, ...]) -> str:
    """The refusal of a name outside ``values``, which lists them as a tuple (the wording tests pin)."""
    return f"{{name}} must be one of {values}, got {{value}}"


@dataclass(frozen=True)
class MPCBanditConfig:
    """Settings of Alg. 1.

    Parameters
    ----------
    n_arms : int
        |A| ≥ 2.
    partition : tuple of int
        Context features held by each computing party, as contiguous blocks in
        context order (spec A2); its length is |P| ≥ 2 and its sum is D. A party
        may hold no features.
    epsilon : float
        Exploration probability ε ∈ [0, 1]; each opened action is log(|A|/ε)-DP.
    precision : int
        Fixed-point bits L, 1 … 26 (paper: 20).
    nr_iterations : int
        Newton–Raphson iterations of the reciprocal (paper: 7).
    reciprocal_start : str
        Initial value of the reciprocal: ``"exp"`` (the paper's, 8 rounds before the
        iterations) or ``"linear"`` (24/17 − 8/17·d, exact to 1/17 on the denominator's range
        [1, 2], no round; 3 iterations then reach L = 20 bits: 25 communication rounds a
        learner round instead of 41 at the paper's 7). Not the paper's; for deployments.
    truncation : str
        ``"auto"`` (paper: local for 2 parties, Alg. 3 for more), ``"local"``,
        ``"wraps"`` or ``"exact"``.
    truncation_rounding : str
        How each party rounds its share in every truncation: ``"unbiased"``, the only one (party 0 floors,
        party 1 ceils: :func:`~privbandits.mpc.truncation.share_quotients`, issue 29). In the results-store
        key, so results stored before (every party flooring, −1 ulp a product, W⁻¹ drifting) are not reused.
    puller, rewarder : str
        p′ (learns a_t and initialises the model) and p″ (inputs r_t): a computing
        party's name (``"p0"`` …) or an outside party (default, Alg. 1: p′, p″ ∉ P).
    binary_rewards : bool
        Rewards are 0/1 (all the paper's settings) and enter as integers, so r_t x_t
        is exact; ``False`` enters real rewards at L bits.
    mask_encoding : str
        ``"integer"``: the one-hot o multiplies the updates as an integer, so the masked
        Sherman–Morrison and b updates need no truncation and cannot wrap; ``"fixed_point"``:
        CrypTen's, o is an encoded 1.0 and every masked update is truncated, so a wrap
        failure (probability ≈ |x|·2^(2L)/2^64, spec §3.6) corrupts the stored state for good:
        the mechanism behind the paper's collapse above L = 22 (Fig. 8).
    overlap_reciprocal : bool
        Compute the Sherman–Morrison reciprocal 1/d and u u^T/d alongside the exploration mix
        and the argmax (:mod:`~privbandits.mpc.overlap`): they need neither a_t nor r_t, so
        their multiplications ride on the argmax's openings, run while p′ pulls and ride on
        r_t x_t's. The same computation and distribution in fewer communication rounds (in
        the simulator's count, 18 instead of 25 with the linear start and 29 instead of 41
        with the paper's, for |P| = 2, |A| = 10; the payload bytes are the same); the dealer
        draws in another order, so a seed gives other randomness. 2 parties (local
        truncation) only. Not the paper's schedule; for deployments, where each round costs
        a network round trip.
    mask_factors : bool
        With ``overlap_reciprocal``: the one-hot o masks the factors of each update, o_a·u_a/d_a
        and o_a·x (exact integer products, computed while p′ pulls), and the outer products come
        out masked, instead of o masking the finished D×D updates in one more matrix product. The
        same learner in about a third fewer bytes, online and of dealer material per party
        (``tests/protocols/mpc_bandit/test_mpc_bandit.py`` pins both counts for |A| = 10, D = 20), with the
        last round after r_t's input done alongside r_t·x. Those outer products are truncated, which
        keeps a 0 exactly 0 with 2 parties (arms not pulled do not change: :func:`~privbandits.mpc.
        truncation.share_quotients`). Other randomness for a seed; not the paper's.
    allmax_lookup : bool
        Each AllMax of the argmax ends in one masked lookup instead of a product tree: arm i is a
        maximum iff it is ≥ each of the |A|−1 others, and that count is read in one round
        (:func:`~privbandits.mpc.comparison.count_is`) instead of ⌈log2(|A|−1)⌉ rounds of
        products (4 for |A| = 10). The same choice; any number of parties. Other randomness for a
        seed; not the paper's.
    lookup_comparison : bool
        With ``allmax_lookup`` (2 computing parties): the argmax's comparisons are masked lookups of public
        tables (:mod:`~privbandits.mpc.lookup`: one-time truth tables from the dealer) in 3 rounds, instead of
        A2B's adder and a daBit in 8, and only the |A|(|A|−1)/2 pairs i < j of the distinct packed keys are
        compared (the other half is 1 minus them). Exact, so the same choice: 5 communication rounds fewer a
        learner round (3 with ``overlap_reciprocal``, whose steps then lack openings to ride on, unless
        ``goldschmidt`` shortens them), a small fraction of the argmax's online payload, and more dealer
        material per party (``tests/protocols/mpc_bandit/test_mpc_bandit.py`` pins the byte counts). Other
        randomness for a seed; not the paper's.
    goldschmidt : bool
        The reciprocal by Goldschmidt's iteration (:func:`~privbandits.mpc.approximations.goldschmidt_steps`)
        instead of Newton–Raphson: the same error 1 − (1 − d·y_0)^(2^k) after ``nr_iterations`` = k, in 1 + k
        rounds instead of 2k, and with ``mask_factors`` it yields u_a/d_a itself (one product fewer). Not
        self-correcting, so the truncations of L = 20 leave u/d off by up to about 3e-6 instead of 2e-6. Other
        numbers, other randomness for a seed; not the paper's.
    dealt_exploration : bool
        With ``allmax_lookup``: the dealer, which draws the coin y_t, the uniforms v_a and γ, also deals the
        one-hot of the arm exploration would pick (y_t·e_{argmax (v, γ)}, computed in the clear from its own
        draws) and the argmax's last lookup one-hot times 1 − y_t, so the argmax of the scores comes out
        multiplied by 1 − y_t and the sum is Alg. 1's choice: s̃ = s + y(v − s) needs no product (1
        communication round fewer), the coin and the uniforms are not dealt, and the computing parties
        learn what they learned before (nothing). The same choice; other randomness for a seed; not the
        paper's.
    fused_input : bool
        Step 1 in the round of step 2: the dealer tells each computing party its block of the mask B of the
        matrix triple of u = W^{-1}x, and the party opens its block of x − B itself (uniform, as every opening)
        instead of secret-sharing x in a round before (:func:`~privbandits.mpc.arithmetic.matmul_inputs`):
        1 communication round fewer, the same opened values' distribution; a party learns only the mask of
        its own block. Other randomness for a seed; not the paper's.
    """

    n_arms: int = option(Integer(low=2), 10, "|A|, the number of arms", "{owner}" + _PHRASE)
    partition: tuple[int, ...] = option(
        IntegerSequence(low=0, min_length=2, min_sum=1),
        (10, 10),
        "context features of each computing party, in context order (a party may hold none)",
        "{name} must give >= 2 parties a non-negative number of features, at least one in all; got {value}",
    )
    epsilon: float = option(
        Real(low=0, high=1), 0.01, "exploration probability ε; each opened action is log(|A|/ε)-DP", _BOUNDS
    )
    precision: int = option(Integer(low=1, high=MAX_PRECISION), 20, "L, fixed-point fractional bits", _PHRASE)
    nr_iterations: int = option(Integer(low=0), NR_ITERATIONS, "Newton–Raphson iterations of the reciprocal", _PHRASE)
    reciprocal_start: str = option(
        Choice(RECIPROCAL_STARTS),
        "exp",
        "the reciprocal's initial value: the paper's exp (8 rounds) or linear (no round; with nr_iterations = 3, "
        "25 communication rounds a learner round instead of 41)",
        _one_of(RECIPROCAL_STARTS),
    )
    truncation: str = option(
        Choice(TRUNCATIONS),
        "auto",
        "auto (local for 2 parties, Alg. 3 for more), local, wraps or exact",
        _one_of(TRUNCATIONS),
    )
    truncation_rounding: str = option(
        Choice(TRUNCATION_ROUNDINGS),
        "unbiased",
        "how each party rounds its share in a truncation (names the rounding in store keys)",
        _one_of(TRUNCATION_ROUNDINGS),
    )
    puller: str = option(_PARTY, "puller", "p′, who learns a_t: a computing party (p0 …) or an outside one", _PHRASE)
    rewarder: str = option(_PARTY, "rewarder", "p″, who inputs r_t: a computing party or an outside one", _PHRASE)
    binary_rewards: bool = option(Boolean(), True, "rewards are 0/1 and enter as integers (r x exact)")
    mask_encoding: str = option(
        Choice(MASK_ENCODINGS),
        "integer",
        "the one-hot multiplies the updates as an integer (no truncation), or as CrypTen's fixed point",
        _one_of(MASK_ENCODINGS),
    )
    overlap_reciprocal: bool = option(
        Boolean(),
        False,
        "compute the reciprocal and u u^T/d alongside the argmax, riding on its openings (2 parties; the same "
        "computation in fewer rounds, other randomness for a seed)",
    )
    mask_factors: bool = option(
        Boolean(),
        False,
        "mask the factors of each update with the one-hot before the outer products, not the D×D products after "
        "them (with overlap_reciprocal; a third fewer bytes, other randomness for a seed)",
    )
    allmax_lookup: bool = option(
        Boolean(),
        False,
        "end each AllMax of the argmax in one masked lookup of the count of arms an arm beats, instead of a product "
        "tree (3 rounds fewer for 10 arms; the same choice, other randomness for a seed)",
    )
    lookup_comparison: bool = option(
        Boolean(),
        False,
        "compare by masked lookups of the dealer's tables, 3 rounds instead of 8 (with allmax_lookup, 2 parties; up "
        "to 5 rounds fewer, the same choice, more dealer material, other randomness for a seed)",
    )
    goldschmidt: bool = option(
        Boolean(),
        False,
        "the reciprocal by Goldschmidt's iteration: 1 + nr_iterations rounds instead of twice nr_iterations (other "
        "numbers, within about 8e-6 at L = 20; other randomness for a seed)",
    )
    dealt_exploration: bool = option(
        Boolean(),
        False,
        "the dealer deals the exploring arm's one-hot and 1 − y_t rides on the argmax's last lookup, so the "
        "exploration mix needs no product (with allmax_lookup; 1 round fewer, the same choice, other randomness for "
        "a seed)",
    )
    fused_input: bool = option(
        Boolean(),
        False,
        "each computing party opens its block of the context minus the dealer's mask in the round of u = W^{-1}x "
        "instead of secret-sharing it first (1 round fewer; other randomness for a seed)",
    )

    def __post_init__(self) -> None:
        check_fields(self, "MPCBanditConfig", adopt=("partition",))
        partition = self.partition
        if self.truncation == "local" and len(partition) != 2:
            raise InvalidInputError(
                f"truncation='local' is for 2 parties, got {len(partition)} (partition {partition}): "
                f"use one of 'auto', 'wraps', 'exact'"
            )
        problem = (
            overlap_problem(self.overlap_reciprocal, len(partition), self.truncation)
            or mask_factors_problem(self.mask_factors, self.overlap_reciprocal, self.mask_encoding)
            or lookup_comparison_problem(self.lookup_comparison, len(partition), self.allmax_lookup, self.n_arms)
            or dealt_exploration_problem(self.dealt_exploration, self.allmax_lookup)
        )
        if problem:
            raise InvalidInputError(problem)

    @property
    def context_norm_limit(self) -> float:
        """Largest accepted ‖x‖: 1, plus the rounding of a unit vector to L fractional bits (√D·2^-L)."""
        return 1.0 + math.sqrt(self.dim) * 2.0**-self.precision

    @property
    def reward_limit(self) -> float:
        """Largest |r| of a real reward (``binary_rewards=False``): r·x at 2L fractional bits fits 63 bits."""
        return 2.0 ** (63 - 2 * self.precision)

    @property
    def dim(self) -> int:
        """D, the length of the concatenated context."""
        return sum(self.partition)

    @property
    def parties(self) -> tuple[str, ...]:
        """Names of the computing parties P."""
        return tuple(f"p{index}" for index in range(len(self.partition)))

    @property
    def privacy_loss(self) -> float:
        """η = log(|A|/ε) per opened action (Theorem 1)."""
        return epsilon_greedy.action_privacy_loss(self.n_arms, self.epsilon)


def _check_context(x: np.ndarray, dim: int, norm_limit: float) -> np.ndarray:
    """A finite context of shape (D,) and L2 norm at most 1 (spec §3.6: with ‖x‖ ≤ 1 and W ⪰ I every entry
    of W^{-1} and the denominator 1 + x^T W^{-1} x stay in the ranges the fixed point and the reciprocal
    are sized for; larger contexts corrupt the shared state)."""
    try:
        x = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(f"context must be a real array of shape ({dim},), got {describe(x)}") from None
    if x.shape != (dim,):
        raise InvalidInputError(f"context must have shape ({dim},), got {x.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        squared = x.dot(x)
    if not squared <= norm_limit * norm_limit:  # also refuses NaN and inf
        check_finite_array(x, "context")
        raise InvalidInputError(
            f"context must have L2 norm <= 1 (up to rounding: {norm_limit:.9g}; normalise it, e.g. "
            f"x / max(1, |x|)), got norm {np.sqrt(squared):.9g}"
        )
    return x


def _check_reward(reward: object, config: MPCBanditConfig) -> float:
    """The pulled arm's reward: 0 or 1 under ``binary_rewards``, else finite with |r| <= ``reward_limit``."""
    if config.binary_rewards:
        if isinstance(reward, bool | np.bool_ | int | float | np.integer | np.floating) and reward in (0, 1):
            return cast(float, reward)  # as given: the engine encodes a bool or numpy number as its value
        raise InvalidInputError(f"binary_rewards is set, so rewards must be 0 or 1, got {describe(reward)}")
    limit = config.reward_limit
    if not (Real().accepts(reward) and abs(cast(float, reward)) <= limit):
        raise InvalidInputError(
            f"reward must be a finite real number with |reward| <= 2^(63 - 2L) = {limit:g} at L = {config.precision}, "
            f"got {describe(reward)}"
        )
    return cast(float, reward)  # a real number (Real accepted it), as given
