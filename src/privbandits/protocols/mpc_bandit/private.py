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

import numpy as np

from privbandits.comm import ROUND, SETUP, Network, Party, Traffic
from privbandits.mpc import Engine
from privbandits.mpc.approximations import goldschmidt_steps, reciprocal_steps
from privbandits.mpc.channel import Owner
from privbandits.mpc.comparison import Kept
from privbandits.mpc.dealer import Dealer, RemoteDealer
from privbandits.mpc.overlap import Matmul, Mul, Steps, run_steps
from privbandits.mpc.sharing import ArithmeticShares, concatenate, expand
from privbandits.privacy import epsilon_greedy
from privbandits.privacy.ledger import LedgerEntry, PrivacyLedger
from privbandits.protocols.mpc_bandit.choice import dealt_choice, private_choice
from privbandits.protocols.mpc_bandit.config import MPCBanditConfig, _check_context, _check_reward
from privbandits.protocols.mpc_bandit.exploration import (
    ExplorationDraw,
    ExplorationStream,
    PrivateSeeds,
    SeedLike,
    _seeds,
    _sequence,
    exploration_words,
)
from privbandits.validation import Instance, NoneOr, check

CHECKPOINT = "checkpoint"
"""Phase (and ledger mechanism suffix) of a decrypted model checkpoint (spec §6.5)."""


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
        engine_seed: int | np.random.SeedSequence
        engine_dealer: Dealer | RemoteDealer | None = None
        inputs: dict[str, SeedLike] | None = None
        if seeds is None:
            if local is not None:
                raise ValueError("a party in its own process needs its own seeds (seeds=PrivateSeeds(...))")
            engine_seed, exploration_seed = _seeds(seed)
        else:
            engine_seed, exploration_seed = 0, _sequence(seeds.exploration)
            inputs = dict(seeds.inputs)
            if local is None:
                engine_dealer = Dealer(len(names), np.random.default_rng(_sequence(seeds.dealer)))
            else:
                if local not in names or dealer is None:
                    raise ValueError(f"local must be one of the computing parties {list(names)}, with a dealer")
                if network is None:
                    raise ValueError("a party in its own process needs its network (network=...)")
                engine_dealer = RemoteDealer(network, local, dealer, len(names), lead=local == names[0])
                inputs = {local: inputs[local]} if local in inputs else {}
        self.engine = engine = Engine(
            names,
            precision=config.precision,
            truncation=config.truncation,
            network=network,
            seed=engine_seed,
            local=local,
            dealer=engine_dealer,
            input_seeds=inputs,
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

    @property
    def traffic(self) -> Traffic:
        """The ledger of the messages the parties sent (:class:`~privbandits.experiments.adapters.NetworkedLearner`)."""
        return self.engine.traffic

    def privacy_metrics(self) -> dict[str, float]:
        """Scalars a run stores (:class:`~privbandits.experiments.adapters.PrivateLearner`): the openings refused as
        invalid and the privacy loss of each opened action."""
        return {"invalid_openings": self.invalid_openings, "privacy_loss_per_action": self.config.privacy_loss}

    def step(self, x: np.ndarray, pull: Callable[[int], float]) -> int:
        """Play one round on context ``x`` (D,); ``pull(arm)`` is the environment, whose
        reward only p″ sees. Returns a_t as learned by p′."""
        x = _check_context(x, self.config.dim, self._norm_limit)
        arm = self.play({name: x[start:stop] for name, start, stop in self._blocks}, pull)
        assert arm is not None, "the simulator hosts p′"
        return arm

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
            choice: tuple[ArithmeticShares | Kept, ...]
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
            opened = engine.open_to((onehot * self._arm_index).sum(), config.puller)
            if rider is not None:  # two of the steps left run while p′ pulls and p″ inputs
                rider.finish(limit=2)
            arm, reward = self._pull(opened, pull)
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
            opened = engine.open_to((onehot * self._arm_index).sum(), config.puller)  # to p′ only
        with engine.alongside(_one(Matmul(onehot[:, None], context[None, :]))) as masked_context:
            scaled = engine.matmul(onehot[:, None, None], rider.result[:, None, :])  # o_a u_a/d_a; o_a x alongside
        arm, reward = self._pull(opened, pull)
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
        pulled = None
        if arm is not None:
            assert pull is not None, "the process that hosts p′ pulls"
            pulled = self._opened(int(arm))
            reward = _check_reward(pull(pulled), self.config)
        return pulled, self.engine.input(reward, self._rewarder, scale=self._reward_scale)

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


def _share_initial_model(engine: Engine, config: MPCBanditConfig, puller: Owner) -> list[ArithmeticShares]:
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
