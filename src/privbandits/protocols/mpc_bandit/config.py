"""The private ε-greedy learner's settings (:class:`MPCBanditConfig`) and the inputs they accept.

The configuration checks each field and the rules that tie them together (:mod:`.rules`); it is also the
results-store key (:meth:`MPCBanditConfig.store_params`). :func:`_check_context` and :func:`_check_reward`
refuse a context or a reward the fixed point cannot carry, for the private learner and its twin alike.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import cast

import numpy as np

from privbandits.mpc.approximations import NR_ITERATIONS, RECIPROCAL_STARTS
from privbandits.mpc.truncation import TRUNCATION_MODES, TRUNCATION_ROUNDINGS
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
    InvalidInputError,
    Real,
    check_finite_array,
    check_integer_sequence,
    describe,
    validate,
)

MAX_PRECISION = 26
"""Scores are compared at 2L fractional bits inside the 62-bit range of an exact comparison."""

MASK_ENCODINGS = ("integer", "fixed_point")

LATER_OPTIONS = (
    "overlap_reciprocal",
    "mask_factors",
    "allmax_lookup",
    "lookup_comparison",
    "goldschmidt",
    "dealt_exploration",
    "fused_input",
)
"""Boolean options added after results were stored: a results-store key holds each only while it is on."""


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
        same learner in a third fewer bytes (for |A| = 10, D = 20: 137 KB a learner round online
        instead of 197 KB, and 124 KB of dealer material per party instead of 184 KB), with the
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
        ``goldschmidt`` shortens them), 2 KB of online payload instead of 35 KB for the argmax (|A| = 10), and
        about 35 KB more dealer material per party. Other randomness for a seed; not the paper's.
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

    n_arms: int = 10
    partition: tuple[int, ...] = (10, 10)
    epsilon: float = 0.01
    precision: int = 20
    nr_iterations: int = NR_ITERATIONS
    reciprocal_start: str = "exp"
    truncation: str = "auto"
    truncation_rounding: str = "unbiased"
    puller: str = "puller"
    rewarder: str = "rewarder"
    binary_rewards: bool = True
    mask_encoding: str = "integer"
    overlap_reciprocal: bool = False
    mask_factors: bool = False
    allmax_lookup: bool = False
    lookup_comparison: bool = False
    goldschmidt: bool = False
    dealt_exploration: bool = False
    fused_input: bool = False

    def __post_init__(self) -> None:
        owner = "MPCBanditConfig"
        if not (isinstance(self.n_arms, int | np.integer) and not isinstance(self.n_arms, bool) and self.n_arms >= 2):
            raise InvalidInputError(f"{owner}: n_arms must be an integer >= 2, got {self.n_arms!r}")
        message = (
            f"partition must give >= 2 parties a non-negative number of features, at least one in all; "
            f"got {describe(self.partition)}"
        )
        try:
            partition = check_integer_sequence(self.partition, "partition", low=0, min_length=2, owner=owner)
        except InvalidInputError:
            raise InvalidInputError(message) from None
        if sum(partition) < 1:
            raise InvalidInputError(message)
        object.__setattr__(self, "partition", partition)
        if not Real(low=0, high=1).accepts(self.epsilon):
            raise InvalidInputError(f"epsilon must be in [0, 1], got {describe(self.epsilon)}")
        if not Integer(low=1, high=MAX_PRECISION).accepts(self.precision):
            raise InvalidInputError(f"precision must be an integer in [1, {MAX_PRECISION}], got {self.precision!r}")
        if not Integer(low=0).accepts(self.nr_iterations):
            raise InvalidInputError(f"nr_iterations must be an integer >= 0, got {self.nr_iterations!r}")
        if not Choice(RECIPROCAL_STARTS).accepts(self.reciprocal_start):
            raise InvalidInputError(
                f"reciprocal_start must be one of {RECIPROCAL_STARTS}, got {describe(self.reciprocal_start)}"
            )
        if not Choice(("auto", *TRUNCATION_MODES)).accepts(self.truncation):
            raise InvalidInputError(
                f"truncation must be one of {('auto', *TRUNCATION_MODES)}, got {describe(self.truncation)}"
            )
        if self.truncation == "local" and len(partition) != 2:
            raise InvalidInputError(
                f"truncation='local' is for 2 parties, got {len(partition)} (partition {partition}): "
                f"use one of 'auto', 'wraps', 'exact'"
            )
        if self.truncation_rounding not in TRUNCATION_ROUNDINGS:
            rounding = describe(self.truncation_rounding)
            raise InvalidInputError(f"truncation_rounding must be one of {TRUNCATION_ROUNDINGS}, got {rounding}")
        if self.mask_encoding not in MASK_ENCODINGS:
            encoding = describe(self.mask_encoding)
            raise InvalidInputError(f"mask_encoding must be one of {MASK_ENCODINGS}, got {encoding}")
        validate(
            owner,
            {name: Boolean() for name in ("binary_rewards", *LATER_OPTIONS)},
            vars(self),
        )
        problem = (
            overlap_problem(self.overlap_reciprocal, len(partition), self.truncation)
            or mask_factors_problem(self.mask_factors, self.overlap_reciprocal, self.mask_encoding)
            or lookup_comparison_problem(self.lookup_comparison, len(partition), self.allmax_lookup, self.n_arms)
            or dealt_exploration_problem(self.dealt_exploration, self.allmax_lookup)
        )
        if problem:
            raise InvalidInputError(problem)
        for role in ("puller", "rewarder"):
            if not (isinstance(getattr(self, role), str) and getattr(self, role)):
                raise InvalidInputError(f"{role} must be a non-empty party name, got {getattr(self, role)!r}")

    def store_params(self, *, twin: bool = False) -> dict:
        """The configuration as a results-store key: every field, except each of :data:`LATER_OPTIONS` while it
        is off (off, the computation is bit for bit what it was before the option existed, so results stored
        then keep their keys; on, it is in the key). ``twin``: the key of the float64 twin, which does not
        truncate, so it leaves out ``truncation_rounding`` (and keeps the key it had before that field)."""
        params = asdict(self)
        for option in LATER_OPTIONS:
            if not params[option]:
                del params[option]
        if twin:
            del params["truncation_rounding"]
        return params

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
