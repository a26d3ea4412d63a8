"""The private multi-party ε-greedy contextual bandit (MPC paper Alg. 1, spec mpc-bandit §4).

Computing parties ``p0 … p{n-1}`` each hold a block of every context (the
``partition``). Per-arm ridge statistics W_a^{-1} (initialised to I, so λ = 1) and
b_a stay secret-shared forever. One round (:meth:`PrivateEpsilonGreedy.step`):

1. every party secret-shares its block x_{t,p}; the shares are concatenated;
2. u_a = W_a^{-1} x (one batched matmul); then, in one multiplication round,
   s_a = b_a·u_a (= w_a^⊤x, scores) and d_a = 1 + u_a·x (the Sherman–Morrison
   denominator);
3. s̃ = s + y(v − s) with the private coin y ~ Bernoulli(ε) and uniforms v_a;
4. o = Argmax(s̃) (Alg. 2, tie-breaking permutation γ); only the arm index is
   opened, and only to the puller p′, which pulls it;
5. the reward holder p″ secret-shares r_t;
6. every arm is updated, masked by the shared one-hot o of step 4 (reused rather
   than re-shared by p′, spec A6; same result, one round less) (Eq. 1):
   W_a^{-1} ← W_a^{-1} − o_a (u_a/d_a) u_a^⊤ and b_a ← b_a + o_a r_t x. The outer
   products and the mask are batched matmuls (matrix triples open only the
   factors, not the D×D products), and the integer mask o multiplies last, so
   arms not pulled change by exactly 0.

Scores are kept at 2L fractional bits (sums of untruncated products, then exact
ring operations), so tied scores (e.g. arms never rewarded, whose b_a = 0) stay
exactly tied as in float64 and the γ tie-breaking decides, as in the plaintext
twin. :class:`PlaintextEpsilonGreedy` runs the same algorithm in float64 on the
same exploration samples (:class:`ExplorationStream`), updating only the pulled
arm (spec §4.5).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np

from privbandits.comm import ROUND, SETUP, Network, Party
from privbandits.mpc import Engine
from privbandits.mpc.approximations import NR_ITERATIONS, RECIPROCAL_STARTS, goldschmidt_steps, reciprocal_steps
from privbandits.mpc.channel import Owner
from privbandits.mpc.comparison import Kept, packed_bits
from privbandits.mpc.dealer import (
    OFFLINE,
    Call,
    Dealer,
    Material,
    RecordingDealer,
    RemoteDealer,
    party_words,
    replay,
)
from privbandits.mpc.overlap import Matmul, Mul, Steps, run_steps
from privbandits.mpc.sharing import ArithmeticShares, concatenate, expand
from privbandits.mpc.truncation import TRUNCATION_MODES, TRUNCATION_ROUNDINGS
from privbandits.privacy import epsilon_greedy
from privbandits.privacy.ledger import LedgerEntry, PrivacyLedger
from privbandits.protocols.mpc_bandit_rules import (
    dealt_exploration_problem,
    lookup_comparison_problem,
    mask_factors_problem,
    overlap_problem,
)
from privbandits.validation import (
    Boolean,
    Choice,
    Instance,
    Integer,
    InvalidInputError,
    NoneOr,
    Real,
    check,
    check_finite_array,
    check_integer_sequence,
    describe,
    validate,
)

MAX_PRECISION = 26
"""Scores are compared at 2L fractional bits inside the 62-bit range of an exact comparison."""

MASK_ENCODINGS = ("integer", "fixed_point")

PACKED_KEY_BITS = 54
"""Scale plus γ bits up to which the argmax packs (s̃, γ) into one key (:func:`~privbandits.mpc.comparison.argmax`):
it leaves 8 bits, |s̃| < 128, below the 62-bit range of the comparison; above (L > 24 with 10 arms) Alg. 2's
two AllMax run instead."""

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

CHECKPOINT = "checkpoint"
"""Phase (and ledger mechanism suffix) of a decrypted model checkpoint (spec §6.5)."""


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
            return reward
        raise InvalidInputError(f"binary_rewards is set, so rewards must be 0 or 1, got {describe(reward)}")
    limit = config.reward_limit
    if not (Real().accepts(reward) and abs(reward) <= limit):
        raise InvalidInputError(
            f"reward must be a finite real number with |reward| <= 2^(63 - 2L) = {limit:g} at L = {config.precision}, "
            f"got {describe(reward)}"
        )
    return reward


SeedLike = int | Sequence[int] | np.random.SeedSequence


class PrivateSeeds(NamedTuple):
    """Seeds each party keeps to itself when the parties run apart (a deployment).

    ``dealer`` seeds the dealer's correlated randomness and ``exploration`` its store of
    exploration samples (coins, uniforms, permutations), both the dealer's secrets;
    ``inputs[owner]`` seeds the generator ``owner`` draws the shares of its inputs from.
    The simulator given the same seeds plays exactly as the parties' processes.
    """

    dealer: SeedLike
    exploration: SeedLike
    inputs: Mapping[str, SeedLike]


def _sequence(seed: SeedLike) -> np.random.SeedSequence:
    return seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)


def exploration_words(draw: ExplorationDraw, precision: int, dealt: bool = False) -> dict[str, np.ndarray]:
    """The dealer's secrets of one round, by dealer kind: the coin y_t, the uniforms v_a at the
    scores' 2L fractional bits, the tie-breaking permutation γ, and with ``dealt`` (``dealt_exploration``)
    the one-hot of the arm exploration picks times y_t and the factor 1 − y_t."""
    words = {
        "bernoulli": np.uint64(draw.coin),
        "uniform": draw.uniforms * np.uint64(1 << precision),
        "permutation": draw.permutation,
    }
    if dealt:
        explored = plaintext_choice(np.zeros(len(draw.uniforms)), 1, draw.uniforms, draw.permutation)
        words["exploring_arm"] = (np.arange(len(draw.uniforms)) == explored).astype(np.uint64) * np.uint64(draw.coin)
        words["exploiting"] = np.uint64(1 - draw.coin)
    return words


class PrivateEpsilonGreedy:
    """Alg. 1 on the MPC engine: all state secret-shared, a_t to p′ only, r_t from p″ only.

    Parameters
    ----------
    config : MPCBanditConfig
    seed : int, SeedSequence or None
        Seeds the engine (parties, dealer) and the exploration stream.
    network : Network or None
        Where the parties talk (default: a fresh in-memory network).
    ledger : PrivacyLedger or None
        Receives one entry per opened action (η of Theorem 1) and per checkpoint.
    seeds : PrivateSeeds or None
        Each party's own seeds instead of ``seed`` (as the parties of a deployment hold them).
    parties : sequence of str or None
        Names of the computing parties (default ``config.parties``: p0, p1, …).
    local : str or None
        Run only this computing party, in its own process (``network`` is its
        :class:`~privbandits.comm.TlsNetwork`): it holds one row of every share, its own,
        inputs only its own block, and takes its dealer material from party ``dealer``'s
        process. Needs ``seeds`` (only ``seeds.inputs[local]`` is read). The puller and
        reward holder run :class:`PullerRewarder`; the dealer :meth:`DealerRole.serve`.

    Attributes
    ----------
    rounds : int
    invalid_openings : int
        Rounds whose opened index was not an arm, which happens only after wrap-around
        failures corrupted the state (L > 22, Fig. 8); p′ then pulls the index modulo |A|.
    """

    def __init__(
        self,
        config: MPCBanditConfig,
        *,
        seed: int | np.random.SeedSequence | None = None,
        network: Network | None = None,
        ledger: PrivacyLedger | None = None,
        seeds: PrivateSeeds | None = None,
        parties: Sequence[str] | None = None,
        local: str | None = None,
        dealer: str | None = None,
    ) -> None:
        owner = "PrivateEpsilonGreedy"
        check(config, "config", Instance((MPCBanditConfig,)), owner)
        check(network, "network", NoneOr(Instance((Network,)), "a fresh in-memory network"), owner)
        check(ledger, "ledger", NoneOr(Instance((PrivacyLedger,)), "a fresh ledger"), owner)
        self.config = config
        names = tuple(parties) if parties is not None else config.parties
        if len(names) != len(config.partition):
            raise ValueError(f"{len(config.partition)} partition blocks need as many parties, got {list(names)}")
        if seeds is None:
            if local is not None:
                raise ValueError("a party in its own process needs its own seeds (seeds=PrivateSeeds(...))")
            engine_seed, exploration_seed = _seeds(seed)
            engine_options = {"seed": engine_seed}
        else:
            engine_seed, exploration_seed = 0, _sequence(seeds.exploration)
            inputs = dict(seeds.inputs)
            if local is None:
                engine_dealer = Dealer(len(names), np.random.default_rng(_sequence(seeds.dealer)))
            else:
                if local not in names or dealer is None:
                    raise ValueError(f"local must be one of the computing parties {list(names)}, with a dealer")
                engine_dealer = RemoteDealer(network, local, dealer, len(names), lead=local == names[0])
                inputs = {local: inputs[local]} if local in inputs else {}
            engine_options = {"seed": 0, "dealer": engine_dealer, "input_seeds": inputs, "local": local}
        self.engine = engine = Engine(
            names, precision=config.precision, truncation=config.truncation, network=network, **engine_options
        )
        # p′ and p″ outside P: the simulator plays them too, and they input through their own Party objects
        # (its channel sends only as the computing parties); a party in its own process only needs their names
        self._outside: dict[str, Party] = {}
        for role in sorted({config.puller, config.rewarder} - set(names)):
            if local is None:
                self._outside[role] = Party(role, engine.network)
            elif role not in engine.network.parties:
                Party(role, engine.network)
        # the dealer's store of exploration samples; a party in its own process gets only its shares of them
        self.exploration = (
            ExplorationStream(config.n_arms, config.epsilon, config.precision, exploration_seed)
            if local is None
            else None
        )
        self.ledger = ledger if ledger is not None else PrivacyLedger()
        self.rounds = 0
        self.invalid_openings = 0
        self._norm_limit = config.context_norm_limit
        bounds = np.cumsum((0, *config.partition))
        self._blocks = [
            (name, start, stop)
            for name, start, stop in zip(names, bounds[:-1], bounds[1:], strict=True)
            if stop > start
        ]
        self._arm_index = np.arange(config.n_arms, dtype=np.uint64)
        self._score_scale = 2 * config.precision
        self._reward_scale = 0 if config.binary_rewards else config.precision
        self._placeholder = ExplorationDraw(0, np.zeros(config.n_arms, np.uint64), np.zeros(config.n_arms, np.uint64))
        self._rewarder = self._outside.get(config.rewarder, config.rewarder)
        self.inverse, self.b = _share_initial_model(engine, config, self._outside.get(config.puller, config.puller))

    def step(self, x: np.ndarray, pull: Callable[[int], float]) -> int:
        """Play one round on context ``x`` (D,); ``pull(arm)`` is the environment, whose
        reward only p″ sees. Returns a_t as learned by p′."""
        x = _check_context(x, self.config.dim, self._norm_limit)
        return self.play({name: x[start:stop] for name, start, stop in self._blocks}, pull)

    def play(self, blocks: Mapping[str, np.ndarray], pull: Callable[[int], float] | None = None) -> int | None:
        """One round (Alg. 1) from each party's block x_{t,p} (``blocks[name]``).

        The simulator passes every block and the environment ``pull``; a party in its own
        process passes its own block only (the others enter as placeholders) and gets None:
        it does not learn a_t.
        """
        config, engine = self.config, self.engine
        draw = self.exploration.draw() if self.exploration is not None else self._placeholder
        dealer, precision = engine.dealer, config.precision
        with engine.phase(ROUND):
            # 1. each party shares its block; 2. u = W^{-1}x, then s, d and uu^T in one round
            inputs = [(blocks.get(name, _placeholder(stop - start)), name) for name, start, stop in self._blocks]
            if config.fused_input:  # each party opens its block of x − B in the product's round
                u, context = engine.matmul_inputs(self.inverse, inputs)
            else:
                context = concatenate(engine.input_many(inputs))
                u = engine.matmul(self.inverse, context)
            scores, quadratic = engine.mul_many([(_integers(self.b), u), (_integers(u), context)])
            scores = ArithmeticShares(scores.sum(axis=-1).shares, self._score_scale, scores.lead)  # b·u at scale 2L
            denominator = 1.0 + engine.truncate(quadratic.sum(axis=-1), precision)
            # 3.–4. exploration with the dealer's coin, uniforms and tie-breaking permutation
            words = exploration_words(draw, precision, config.dealt_exploration)
            if config.dealt_exploration:
                gamma = dealer.deal("permutation", words["permutation"], 0)
                explored = dealer.deal("exploring_arm", words["exploring_arm"], 0)
                choice = (scores, gamma, explored, Kept(words["exploiting"], "exploiting"))
            else:
                coin = dealer.deal("bernoulli", words["bernoulli"], 0)
                uniforms = dealer.deal("uniform", words["uniform"], self._score_scale)
                gamma = dealer.deal("permutation", words["permutation"], 0)
                choice = (scores, coin, uniforms, gamma)
            finish = self._finish_masking_factors if config.mask_factors else self._finish_masking_products
            arm = finish(denominator, u, context, choice, pull)
        self.rounds += 1
        return arm

    def _choose(self, choice: tuple) -> ArithmeticShares:
        """Steps 3–4: the one-hot of a_t (:func:`private_choice`, or :func:`dealt_choice`)."""
        choose = dealt_choice if self.config.dealt_exploration else private_choice
        return choose(self.engine, *choice, lookup=self.config.allmax_lookup, tabled=self.config.lookup_comparison)

    def _reciprocal(self, denominator: ArithmeticShares, numerator: ArithmeticShares | None = None) -> Steps:
        """numerator/d (1/d without a numerator) as steps: Goldschmidt's iteration, or Newton–Raphson's (then
        one product with the numerator)."""
        config = self.config
        if config.goldschmidt:
            return goldschmidt_steps(
                self.engine, denominator, config.nr_iterations, config.reciprocal_start, numerator=numerator
            )
        steps = reciprocal_steps(self.engine, denominator, config.nr_iterations, config.reciprocal_start)
        return steps if numerator is None else _scaled_steps(steps, numerator)

    def _finish_masking_products(
        self, denominator: ArithmeticShares, u: ArithmeticShares, context: ArithmeticShares, choice: tuple, pull
    ) -> int | None:
        """Steps 4–6 of :meth:`play` as the paper orders them: the one-hot o masks the finished updates."""
        config, engine = self.config, self.engine
        a, d = config.n_arms, config.dim
        overlap = config.overlap_reciprocal
        with engine.alongside(_outer_steps(self._reciprocal(denominator, u), u)) if overlap else nullcontext() as rider:
            onehot = self._choose(choice)
            # a_t is opened to p′ only
            arm = engine.open_to((onehot * self._arm_index).sum(), config.puller)
            if rider is not None:  # two of the steps left run while p′ pulls and p″ inputs
                rider.finish(limit=2)
            arm, reward = self._pull(arm, pull)
            if rider is not None:
                rewarded = engine.mul(reward, context)  # one more step rides on it; the rest run after
        # 6. Sherman–Morrison (Eq. 1) and b updates on every arm; the mask o multiplies last,
        # so arms not pulled change by exactly 0 (and, as integers, nothing is truncated)
        if rider is not None:
            outer = rider.result
        else:
            if config.goldschmidt:  # u/d itself
                scaled, rewarded = run_steps(engine, self._reciprocal(denominator, u)), engine.mul(reward, context)
            else:
                inverse_d = run_steps(engine, self._reciprocal(denominator))
                scaled, rewarded = engine.mul_many([(inverse_d[:, None], u), (reward, context)])
            outer = engine.matmul(scaled[:, :, None], u[:, None, :])
        outer = outer.reshape(a, 1, d * d)  # u u^T / d per arm
        updates = concatenate([outer, rewarded._like(expand(rewarded.shares, (a, 1, d)))])
        masked = engine.matmul(self._mask(onehot)[:, None, None], updates)  # o_a · (…)
        self.inverse = self.inverse - masked[:, 0, : d * d].reshape(a, d, d)
        self.b = self.b + masked[:, 0, d * d :]
        return arm

    def _finish_masking_factors(
        self, denominator: ArithmeticShares, u: ArithmeticShares, context: ArithmeticShares, choice: tuple, pull
    ) -> int | None:
        """Steps 4–6 of :meth:`play` with ``mask_factors``: o masks the factors u_a/d_a and x (exact integer
        products, computed while p′ pulls), so the outer products come out masked; each is truncated so that
        0 stays exactly 0. Arms not pulled change by exactly 0, as when o masks the finished updates, and no
        D×D matrix is masked and opened a second time."""
        config, engine = self.config, self.engine
        a, d = config.n_arms, config.dim
        with engine.alongside(self._reciprocal(denominator, u)) as rider:  # 1/d_a and u_a/d_a ride on the argmax
            onehot = self._choose(choice)
            arm = engine.open_to((onehot * self._arm_index).sum(), config.puller)  # to p′ only
        with engine.alongside(_one(Matmul(onehot[:, None], context[None, :]))) as masked_context:
            scaled = engine.matmul(onehot[:, None, None], rider.result[:, None, :])  # o_a u_a/d_a; o_a x alongside
        arm, reward = self._pull(arm, pull)
        # one round: o_a (u_a/d_a) u_a^T and r_t o_a x, untruncated (twice the scale) ...
        with engine.alongside(_one(Matmul(_integers(scaled).reshape(a, d, 1), u[:, None, :]))) as outer:
            rewarded = engine.matmul(_integers(reward).reshape(1, 1), masked_context.result.reshape(1, a * d))
        # ... then truncated with 0 kept exact
        self.inverse = self.inverse - engine.truncate(outer.result, config.precision).reshape(a, d, d)
        self.b = self.b + engine.truncate(rewarded, self._reward_scale).reshape(a, d)
        return arm

    def _pull(self, arm: np.ndarray | None, pull: Callable[[int], float] | None) -> tuple[int | None, ArithmeticShares]:
        """Step 5: p′ (where this process hosts it) records the opening and pulls a_t; p″ shares r_t. A refused
        reward voids the round: the opening stays in the ledger and the traffic, the model is not touched."""
        reward = 0.0  # a placeholder where p″ is another process
        if arm is not None:
            arm = self._opened(int(arm))
            reward = _check_reward(pull(arm), self.config)
        return arm, self.engine.input(reward, self._rewarder, scale=self._reward_scale)

    def _opened(self, arm: int) -> int:
        """p′'s side of an opening: the ledger entry (η of Theorem 1), and the index as an arm."""
        record_opening(self, arm)
        return arm % self.config.n_arms

    def _mask(self, onehot: ArithmeticShares) -> ArithmeticShares:
        """The one-hot as the update mask: integers (exact), or CrypTen's encoded 1.0 (truncated)."""
        if self.config.mask_encoding == "integer":
            return onehot
        return ArithmeticShares(
            onehot.shares * np.uint64(1 << self.config.precision), self.config.precision, onehot.lead
        )

    def checkpoint(self) -> tuple[np.ndarray, np.ndarray]:
        """Decrypted (W^{-1}, b) for evaluation only (spec §6.5); outside the DP guarantee,
        so the ledger records it with η = ∞."""
        with self.engine.phase(CHECKPOINT):
            inverse, b = self.engine.open(self.inverse), self.engine.open(self.b)
        self.ledger.record(
            LedgerEntry(f"mpc_bandit.{CHECKPOINT}", math.inf, None, "the whole history", {"round": self.rounds})
        )
        return inverse, b


def _outer_steps(scaled_steps: Steps, u: ArithmeticShares) -> Steps:
    """u u^T / d per arm as steps (overlap_reciprocal): u/d's, then the outer product."""
    scaled = yield from scaled_steps
    return (yield Matmul(scaled[:, :, None], u[:, None, :]))


def _scaled_steps(reciprocal: Steps, u: ArithmeticShares) -> Steps:
    """u / d per arm as steps (mask_factors): the reciprocal's, then the scaling."""
    inverse_d = yield from reciprocal
    return (yield Mul(inverse_d[:, None], u))


def _one(request: Mul | Matmul) -> Steps:
    """One product as steps (to ride on another product's opening)."""
    return (yield request)


def private_choice(
    engine: Engine,
    scores: ArithmeticShares,
    coin: ArithmeticShares,
    uniforms: ArithmeticShares,
    gamma: ArithmeticShares,
    *,
    lookup: bool = False,
    tabled: bool = False,
) -> ArithmeticShares:
    """Alg. 1 steps 3–4 over any leading batch axes: s̃ = s + y(v − s), then Argmax (Alg. 2),
    packed into one AllMax of (s̃, γ) keys while they fit (:data:`PACKED_KEY_BITS`): same choice.

    ``scores`` and ``uniforms`` (…, |A|) share a scale; the coin y (…) and the
    permutation γ (…, |A|) are integers. ``lookup``: each AllMax ends in a masked lookup
    (``allmax_lookup``); ``tabled``: its comparisons are table lookups (``lookup_comparison``).
    Returns the one-hot (integer shares).
    """
    noisy = scores + engine.mul(coin[..., None], uniforms - scores)
    return _argmax(engine, noisy, gamma, lookup=lookup, tabled=tabled)


def dealt_choice(
    engine: Engine,
    scores: ArithmeticShares,
    gamma: ArithmeticShares,
    explored: ArithmeticShares,
    exploiting: Kept,
    *,
    lookup: bool = True,
    tabled: bool = False,
) -> ArithmeticShares:
    """:func:`private_choice` with the exploration dealt (``dealt_exploration``): the argmax of the scores
    (packed with γ while they fit), multiplied by the dealer's 1 − y_t in its last lookup, plus the dealer's
    y_t·e_a of the arm exploration picks. The same one-hot, without the product y(v − s)."""
    return _argmax(engine, scores, gamma, lookup=lookup, tabled=tabled, kept=exploiting) + explored


def _argmax(engine: Engine, values: ArithmeticShares, gamma: ArithmeticShares, **options) -> ArithmeticShares:
    """Alg. 2 on ``values`` with the dealer's γ, packed into one AllMax of (value, γ) keys while they fit
    (:data:`PACKED_KEY_BITS`); ``options`` as :func:`~privbandits.mpc.comparison.argmax`'s."""
    packed = values.scale + packed_bits(values.shape[-1]) <= PACKED_KEY_BITS
    return engine.argmax(values, gamma, packed=packed, **options)


def plaintext_choice(scores: np.ndarray, coin: np.ndarray, uniforms: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """:func:`private_choice` in float64, as arm indices: the maximum of s̃ with the largest γ."""
    noisy = np.where(np.asarray(coin, dtype=bool)[..., None], uniforms, scores)
    return np.argmax(np.where(noisy == noisy.max(axis=-1, keepdims=True), gamma, 0), axis=-1)


def _share_initial_model(engine: Engine, config: MPCBanditConfig, puller: Owner) -> list[ArithmeticShares | None]:
    """Setup (Alg. 1): p′ (its name, or its own Party where the simulator plays it) initialises
    W_a^{-1} = I, b_a = 0 and shares them."""
    a, d = config.n_arms, config.dim
    with engine.phase(SETUP):
        return engine.input_many([(np.broadcast_to(np.eye(d), (a, d, d)), puller), (np.zeros((a, d)), puller)])


def _placeholder(size: int) -> np.ndarray:
    """Stands for another party's input of ``size`` values (only its shape is read)."""
    return np.zeros(size)


def record_opening(learner, arm: int) -> None:
    """What p′ does on opening a_t: one ledger entry (Theorem 1), and counting a non-arm index."""
    config = learner.config
    epsilon_greedy.record_action(learner.ledger, config.n_arms, config.epsilon, learner.rounds)  # when opened
    if not 0 <= arm < config.n_arms:  # only after wrap-around failures corrupted the state (L > 22)
        learner.invalid_openings += 1


def _integers(x: ArithmeticShares) -> ArithmeticShares:
    """The same shares read at scale 0, so a product with them is kept untruncated (scale 2L)."""
    return ArithmeticShares(x.shares, 0, x.lead)


class PullerRewarder:
    """p′ and p″ as one party outside P, in its own process (a deployment's environment).

    It shares the initial model (setup), then each round learns a_t (the computing parties
    reveal it to it alone), pulls it, observes r_t and secret-shares it: the puller's and
    reward holder's part of :meth:`PrivateEpsilonGreedy.play`, on the same engine calls.
    ``input_seed`` seeds its input shares (``PrivateSeeds.inputs[config.puller]``).
    """

    def __init__(
        self,
        config: MPCBanditConfig,
        network: Network,
        parties: Sequence[str],
        input_seed: SeedLike,
        *,
        ledger: PrivacyLedger | None = None,
    ) -> None:
        if config.puller != config.rewarder or config.puller in parties:
            raise ValueError("PullerRewarder plays p′ = p″ outside the computing parties")
        self.config = config
        self.engine = Engine(
            tuple(parties),
            precision=config.precision,
            truncation=config.truncation,
            seed=0,
            network=network,
            local=config.puller,
            input_seeds={config.puller: input_seed},
        )
        self.ledger = ledger if ledger is not None else PrivacyLedger()
        self.rounds = 0
        self.invalid_openings = 0
        self._reward_scale = 0 if config.binary_rewards else config.precision

    def setup(self) -> None:
        _share_initial_model(self.engine, self.config, self.config.puller)

    def play(self, pull: Callable[[int], float]) -> int:
        """One round: learn a_t, ``pull`` it, share the reward; returns a_t."""
        config, engine = self.config, self.engine
        with engine.phase(ROUND):
            arm = int(engine.open_to(None, config.puller, scale=0, shape=()))
            record_opening(self, arm)
            arm %= config.n_arms
            engine.input(_check_reward(pull(arm), config), config.rewarder, scale=self._reward_scale)
        self.rounds += 1
        return arm


def dealer_schedule(config: MPCBanditConfig) -> list[Call]:
    """The dealer calls of one round of :meth:`PrivateEpsilonGreedy.play`, in order (they depend on
    the configuration only), recorded on a scratch simulator."""
    scratch = PrivateEpsilonGreedy(config, seed=0)
    recorder = scratch.engine.dealer = RecordingDealer(scratch.engine.dealer)
    scratch.step(np.zeros(config.dim), lambda arm: 0)
    return recorder.calls


class DealerRole:
    """The trusted dealer in its own process: each round, its exploration draw and the replayed
    material of :func:`dealer_schedule`, split into each computing party's own shares.

    Seeded by the dealer's private seeds, it draws exactly what the simulator's dealer and
    exploration stream draw with the same :class:`PrivateSeeds`.
    """

    def __init__(self, config: MPCBanditConfig, n_parties: int, seeds: PrivateSeeds) -> None:
        self.config, self.n_parties = config, n_parties
        self.dealer = Dealer(n_parties, np.random.default_rng(_sequence(seeds.dealer)))
        self.exploration = ExplorationStream(
            config.n_arms, config.epsilon, config.precision, _sequence(seeds.exploration)
        )
        self.calls = dealer_schedule(config)
        self.rounds = 0

    def next_round(self) -> list[np.ndarray]:
        """The next round's material: one flat word array per computing party."""
        words = exploration_words(self.exploration.draw(), self.config.precision, self.config.dealt_exploration)
        materials = replay(self.dealer, self.calls, words.__getitem__)
        self.rounds += 1
        return [party_words(materials, row) for row in range(self.n_parties)]

    def serve(self, dealer: Party, parties: Sequence[str]) -> int:
        """Draw the next round's material and send each party its shares from the ``dealer``'s own
        Party (phase ``offline``); its bytes."""
        sent = 0
        with dealer.network.phase(OFFLINE):
            for name, words in zip(parties, self.next_round(), strict=True):
                dealer.send(name, Material(self.rounds, words))
                sent += words.nbytes
        return sent


class PlaintextEpsilonGreedy:
    """The float64 twin of Alg. 1 with the private learner's exploration samples (spec §4.5).

    Only the pulled arm is updated (Sherman–Morrison on W_a^{-1}, then w_a = W_a^{-1} b_a).
    Ties among maximal scores go to the largest γ, as the private argmax does.
    """

    def __init__(self, config: MPCBanditConfig, *, seed: int | np.random.SeedSequence | None = None) -> None:
        check(config, "config", Instance((MPCBanditConfig,)), "PlaintextEpsilonGreedy")
        self.config = config
        a, d = config.n_arms, config.dim
        self.exploration = ExplorationStream(config.n_arms, config.epsilon, config.precision, _seeds(seed)[1])
        self.inverse = np.tile(np.eye(d), (a, 1, 1))
        self.b = np.zeros((a, d))
        self.weights = np.zeros((a, d))
        self._grid = float(1 << config.precision)
        self._norm_limit = config.context_norm_limit
        self.rounds = 0

    def step(self, x: np.ndarray, pull: Callable[[int], float]) -> int:
        """Play one round; same contract as :meth:`PrivateEpsilonGreedy.step`."""
        x = _check_context(x, self.config.dim, self._norm_limit)
        draw = self.exploration.draw()
        arm = int(plaintext_choice(self.weights @ x, draw.coin, draw.uniforms / self._grid, draw.permutation))
        reward = _check_reward(pull(arm), self.config)  # the private learner's rule; refused: the model is untouched
        inverse = self.inverse[arm]
        u = inverse @ x
        inverse -= np.outer(u, u / (1.0 + u @ x))
        self.b[arm] += reward * x
        self.weights[arm] = inverse @ self.b[arm]
        self.rounds += 1
        return arm

    def checkpoint(self) -> tuple[np.ndarray, np.ndarray]:
        """(W^{-1}, b), copies."""
        return self.inverse.copy(), self.b.copy()
