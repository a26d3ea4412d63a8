"""The parties outside P in their own processes (a deployment): p′ = p″ (:class:`PullerRewarder`) and the
trusted dealer (:class:`DealerRole`, replaying one round's :func:`dealer_schedule`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from privbandits.comm import ROUND, Network, Party
from privbandits.mpc import Engine
from privbandits.mpc.dealer import OFFLINE, Call, Dealer, Material, RecordingDealer, party_words, replay
from privbandits.privacy.ledger import PrivacyLedger
from privbandits.protocols.mpc_bandit.config import MPCBanditConfig, _check_reward
from privbandits.protocols.mpc_bandit.exploration import (
    ExplorationStream,
    PrivateSeeds,
    SeedLike,
    _sequence,
    exploration_words,
)
from privbandits.protocols.mpc_bandit.private import PrivateEpsilonGreedy, _share_initial_model, record_opening


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
            opened = engine.open_to(None, config.puller, scale=0, shape=())
            assert opened is not None, "opened to this party (the puller)"
            arm = int(opened)
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
