"""The private multi-party ε-greedy bandit (MPC paper Alg. 1) as separate party processes.

Roles (``[parties.NAME] role = ...``) and what each party's data file (``.npz``) holds:

* ``computing`` (one per partition block, in file order): ``contexts`` (T, D_p) float64, its
  block of every round's context, and ``share_seed`` (uint64 words), the private seed of the
  shares of its inputs. Its process holds only its own share of every secret (the engine's
  per-party representation, :class:`~privbandits.mpc.Engine` with ``local=``).
* ``environment``: p′ and p″ outside the computing parties. ``rewards`` (T, |A|), the reward
  arm a would give in round t (0/1 unless ``binary_rewards = false``), and ``share_seed``. It
  alone learns a_t (Theorem 1: η = log(|A|/ε) per opening), pulls it and shares r_t.
* ``dealer``: ``seed`` (uint64 words), its private seed: the dealer's correlated randomness and
  its store of exploration samples (coins, uniforms, tie-breaking permutations) derive from it.
  It sends each computing party its shares of one round's material per round (phase
  ``offline``) and nothing else.

With the same files, :func:`run_in_memory` (the stacked simulator given every party's seeds,
:class:`~privbandits.protocols.mpc_bandit.PrivateSeeds`) plays bit-identically: same arms, same
shares, the same payload bytes on every link of the online phases. Every private seed is OS
entropy in its own party's file (``deploy data`` writes them with :mod:`secrets`), in either mode
of the deployment's ``reproducible`` (which changes nothing here: no party's randomness derives
from ``protocol.seed``, only the synthetic data do).

Checkpoints and ``--resume``: each computing party and the environment save their state (their
shares of W^{-1} and b, their input generator, the decisions) every ``checkpoint_every`` rounds,
atomically, keeping the last two (a party killed mid-round may be one checkpoint behind the
others). Resumed, every party runs setup again, then tells the dealer which rounds it can resume
from (a ``resume`` phase); the dealer picks the last round all of them have, tells them, and
replays its material up to there from its seed (its state is its seed and the round), so the
session continues as if it had never stopped.
"""

from __future__ import annotations

import math
import secrets
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privbandits.comm import Message, Network, Party, TlsNetwork, message
from privbandits.declared import MPCDeploymentOptions
from privbandits.deploy import checkpoint, entropy
from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.files import read_arrays, write_private_npz
from privbandits.deploy.mpc_bandit.section import MPCProtocol
from privbandits.deploy.registry import PartyFunctions, deadline_by_role, play_by_role

PARTY_IMPORTS = ("privbandits.protocols.mpc_bandit",)
"""Modules the parties import when they run (not when the CLI loads this one): a fork server preloads them."""

RESUME = "resume"
"""Phase of a resumed session in which the parties agree on the round to continue from."""

DATA_STREAM = 0


@message("deploy.mpc.resume_offer")
class ResumeOffer(Message):
    """Party → dealer, only in a resumed session: the rounds it holds a checkpoint of."""

    rounds: np.ndarray


@message("deploy.mpc.resume_at")
class ResumeAt(Message):
    """Dealer → party: rounds 1..``round`` are done by everyone; continue with the next."""

    round: int


# ----------------------------------------------------------------------------- files


def _load(path: Path, role: str, wanted: dict[str, tuple[str, int | None]]) -> dict[str, np.ndarray]:
    """Arrays of a party's ``.npz`` file: ``wanted[key] = (dtype kinds, ndim)``, all checked."""
    arrays = read_arrays(path, f"{role} party", wanted)
    for key, (kinds, ndim) in wanted.items():
        value = arrays[key]
        if value.dtype.kind not in kinds or (ndim is not None and value.ndim != ndim):
            raise DeploymentError(
                f"{path}: {key} must be a {ndim}-d array of kind {kinds!r}, got {value.dtype} {value.shape}"
            )
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise DeploymentError(f"{path}: {key} must be finite")
    return arrays


def _seed_words(arrays: dict[str, np.ndarray], key: str, path: Path) -> list[int]:
    words = arrays[key]
    if words.dtype != np.uint64 or len(words) < 2:
        raise DeploymentError(f"{path}: {key} must be at least 2 uint64 words, got {words.dtype} {words.shape}")
    return [int(word) for word in words]


@dataclass(frozen=True)
class ComputingData:
    contexts: np.ndarray
    share_seed: list[int]


@dataclass(frozen=True)
class EnvironmentData:
    rewards: np.ndarray
    share_seed: list[int]


def blocks(deployment: Deployment[MPCProtocol]) -> dict[str, tuple[int, int]]:
    """Each computing party's columns ``[start, stop)`` of the context, in file order."""
    names = deployment.names("computing")
    bounds = np.cumsum([0, *deployment.protocol.partition])
    return {name: (int(bounds[i]), int(bounds[i + 1])) for i, name in enumerate(names)}


def load_computing(deployment: Deployment[MPCProtocol], name: str) -> ComputingData:
    protocol, path = deployment.protocol, deployment.data_file(name)
    arrays = _load(path, "computing", {"contexts": ("f", 2), "share_seed": ("u", 1)})
    start, stop = blocks(deployment)[name]
    contexts = arrays["contexts"]
    if contexts.shape[1] != stop - start or len(contexts) < protocol.rounds:
        raise DeploymentError(
            f"{path}: contexts must have shape (rounds >= {protocol.rounds}, {stop - start}), got {contexts.shape}"
        )
    norms = np.linalg.norm(contexts, axis=1)
    limit = 1.0 + math.sqrt(protocol.dim) * 2.0**-protocol.precision
    if np.any(norms > limit):
        raise DeploymentError(
            f"{path}: every context block must have L2 norm <= 1 (the whole context must), "
            f"got {norms.max():.6g} in round {int(np.argmax(norms)) + 1}"
        )
    return ComputingData(np.ascontiguousarray(contexts, dtype=np.float64), _seed_words(arrays, "share_seed", path))


def load_environment(deployment: Deployment[MPCProtocol], name: str) -> EnvironmentData:
    protocol, path = deployment.protocol, deployment.data_file(name)
    arrays = _load(path, "environment", {"rewards": ("fiub", 2), "share_seed": ("u", 1)})
    rewards = arrays["rewards"]
    if rewards.shape[1] != protocol.n_arms or len(rewards) < protocol.rounds:
        raise DeploymentError(
            f"{path}: rewards must have shape (rounds >= {protocol.rounds}, {protocol.n_arms}), got {rewards.shape}"
        )
    if protocol.binary_rewards and not np.all((rewards == 0) | (rewards == 1)):
        raise DeploymentError(f"{path}: binary_rewards is set, so every reward must be 0 or 1")
    return EnvironmentData(np.asarray(rewards, dtype=np.float64), _seed_words(arrays, "share_seed", path))


def load_dealer_seed(deployment: Deployment[MPCProtocol], name: str) -> list[int]:
    path = deployment.data_file(name)
    return _seed_words(_load(path, "dealer", {"seed": ("u", 1)}), "seed", path)


def _entropy() -> np.ndarray:
    return np.frombuffer(secrets.token_bytes(32), dtype=np.uint64).copy()


def write_synthetic_data(deployment: Deployment[MPCProtocol]) -> dict[str, Path]:
    """Every party's file for a synthetic problem (the MPC paper's k-means arms, §6.2), seeded by
    ``protocol.seed``; the private seeds come from OS entropy.

    Arm a has a centre c_a on the unit sphere; round t's context is a unit vector near a random
    centre, and arm a rewards 1 with probability exp(−‖x − c_a‖² / (2σ)), σ = 1/2.
    """
    protocol = deployment.protocol
    rng = np.random.default_rng([protocol.seed, DATA_STREAM])
    centres = rng.standard_normal((protocol.n_arms, protocol.dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    labels = rng.integers(0, protocol.n_arms, protocol.rounds)
    contexts = centres[labels] + 0.5 * rng.standard_normal((protocol.rounds, protocol.dim)) / math.sqrt(protocol.dim)
    contexts /= np.linalg.norm(contexts, axis=1, keepdims=True)
    distance = ((contexts[:, None, :] - centres[None, :, :]) ** 2).sum(axis=-1)
    rewards = (rng.random(distance.shape) < np.exp(-distance / (2 * 0.5))).astype(np.float64)
    files: dict[str, dict[str, np.ndarray]] = {}
    for name, (start, stop) in blocks(deployment).items():
        files[name] = {"contexts": contexts[:, start:stop], "share_seed": _entropy()}
    files[deployment.names("environment")[0]] = {"rewards": rewards, "share_seed": _entropy()}
    files[deployment.names("dealer")[0]] = {"seed": _entropy()}
    written = {}
    for name, arrays in files.items():
        written[name] = write_private_npz(deployment.data_file(name), **arrays)
    return written


# ----------------------------------------------------------------------------- the protocol's settings


def config_of(deployment: Deployment[MPCProtocol]):
    """The :class:`~privbandits.protocols.mpc_bandit.MPCBanditConfig` of the deployment (p′ = p″ = the environment)."""
    from privbandits.protocols.mpc_bandit import MPCBanditConfig

    protocol: MPCProtocol = deployment.protocol
    environment = deployment.names("environment")[0]
    options = protocol.model_dump(include=set(MPCDeploymentOptions.model_fields))  # the section's own
    parties: dict[str, Any] = {"n_arms": protocol.n_arms, "partition": tuple(protocol.partition)}
    return MPCBanditConfig(**parties, puller=environment, rewarder=environment, **options)


def dealer_seeds(seed: Sequence[int]) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """The dealer's (material, exploration) seeds from its private seed."""
    material, exploration = np.random.SeedSequence(list(seed)).spawn(2)
    return material, exploration


def private_seeds(deployment: Deployment[MPCProtocol]):
    """Every party's seeds, read from every party's file (only the in-memory reference may do this)."""
    from privbandits.protocols.mpc_bandit import PrivateSeeds

    material, exploration = dealer_seeds(load_dealer_seed(deployment, deployment.names("dealer")[0]))
    inputs = {name: load_computing(deployment, name).share_seed for name in deployment.names("computing")}
    environment = deployment.names("environment")[0]
    inputs[environment] = load_environment(deployment, environment).share_seed
    return PrivateSeeds(material, exploration, inputs)


@dataclass
class Run:
    """What the environment decided and observed."""

    arms: np.ndarray
    rewards: np.ndarray
    seconds: float = 0.0


def run_in_memory(deployment: Deployment[MPCProtocol], network: Network | None = None):
    """The same session in the stacked simulator (every party's file read here), for comparison:
    ``(Run, network, learner)``."""
    from privbandits.comm import InMemoryNetwork
    from privbandits.protocols.mpc_bandit import PrivateEpsilonGreedy

    protocol = deployment.protocol
    network = network if network is not None else InMemoryNetwork()
    learner = PrivateEpsilonGreedy(
        config_of(deployment),
        seeds=private_seeds(deployment),
        parties=deployment.names("computing"),
        network=network,
    )
    contexts = np.concatenate(
        [load_computing(deployment, name).contexts[: protocol.rounds] for name in deployment.names("computing")], axis=1
    )
    rewards = load_environment(deployment, deployment.names("environment")[0]).rewards
    arms = []
    start = time.perf_counter()
    for t in range(protocol.rounds):
        arms.append(learner.step(contexts[t], rewards[t].__getitem__))
    seconds = time.perf_counter() - start
    chosen = np.asarray(arms, dtype=np.int64)
    return Run(chosen, rewards[np.arange(len(chosen)), chosen], seconds), network, learner


# ----------------------------------------------------------------------------- checkpoints


def _latest(deployment: Deployment[MPCProtocol], name: str) -> Path:
    return deployment.checkpoint_path(name)


def _previous(deployment: Deployment[MPCProtocol], name: str) -> Path:
    path = deployment.checkpoint_path(name)
    return path.with_name(f"{path.stem}.previous{path.suffix}")


def save_state(
    deployment: Deployment[MPCProtocol], name: str, rounds: int, arrays: dict[str, np.ndarray], meta: dict
) -> None:
    """Checkpoint after ``rounds`` rounds; the one before stays as the previous checkpoint."""
    latest = _latest(deployment, name)
    if latest.is_file():
        latest.replace(_previous(deployment, name))
    checkpoint.save(latest, arrays, {**meta, "round": rounds, "digest": deployment.protocol_digest()})


def saved_states(deployment: Deployment[MPCProtocol], name: str) -> dict[int, tuple[dict[str, np.ndarray], dict]]:
    """This party's checkpoints by round (the latest two), for this deployment only. A damaged one is left out, with
    a line on stderr naming it (the party offers the other: the session resumes from the previous checkpoint); both
    damaged is :class:`~privbandits.deploy.checkpoint.DamagedState`."""
    states, damaged = {}, []
    for path in (_previous(deployment, name), _latest(deployment, name)):
        try:
            saved = checkpoint.load(path)
        except checkpoint.DamagedState as exc:
            damaged.append(exc)
            continue
        if saved is not None and saved[1].get("digest") == deployment.protocol_digest():
            states[int(saved[1]["round"])] = saved
    if damaged and not states:
        raise damaged[-1]
    for refused in damaged:
        print(f"{name}: {refused}; resuming from the previous checkpoint", file=sys.stderr, flush=True)
    return states


def _offer_and_agree(deployment: Deployment[MPCProtocol], party: Party) -> tuple[int, tuple]:
    """A resumed party's ``resume`` phase, through its own ``party``: offer its checkpoints to the
    dealer, learn the round, load it."""
    dealer, name = deployment.names("dealer")[0], party.name
    states = saved_states(deployment, name)
    if not states:
        raise DeploymentError(f"no checkpoint at {_latest(deployment, name)} to resume from (start the session afresh)")
    with party.network.phase(RESUME):
        party.send(dealer, ResumeOffer(np.asarray(sorted(states), dtype=np.int64)))
        agreed = party.receive(ResumeAt, dealer).round
    if agreed not in states:
        raise DeploymentError(f"{dealer!r} resumes after round {agreed}, but {name!r} holds rounds {sorted(states)}")
    return agreed, states[agreed]


# ----------------------------------------------------------------------------- the parties


receive_deadline = deadline_by_role({"computing": 1.0}, default=2.0)
"""Seconds a party waits for a message before it counts its peer as lost: computing parties wait ``deadline_s``;
the dealer and the environment twice that. The environment waits on the computing parties, which wait on each
other: if one computing party stalls, the one waiting on it reports the stall first and tells everyone, before the
environment (or a dealer blocked writing to a computing party) would blame the wrong one."""


def _run_dealer(deployment: Deployment[MPCProtocol], name: str, network: TlsNetwork, resume: bool) -> dict:
    from privbandits.protocols.mpc_bandit import DealerRole, PrivateSeeds

    protocol, computing = deployment.protocol, deployment.names("computing")
    material, exploration = dealer_seeds(load_dealer_seed(deployment, name))
    role = DealerRole(config_of(deployment), len(computing), PrivateSeeds(material, exploration, {}))
    dealer = Party(name, network)
    done = 0
    if resume:
        stateful = [*computing, *deployment.names("environment")]
        with network.phase(RESUME):
            offers = {party: set(dealer.receive(ResumeOffer, party).rounds.tolist()) for party in stateful}
            common = set.intersection(*offers.values())
            if not common:
                raise DeploymentError(f"the parties hold no checkpoint of a common round: {offers}")
            done = max(common)
            for party in stateful:
                dealer.send(party, ResumeAt(done))
        for _ in range(done):  # the dealer's state is its seed and the round: draw again up to there
            role.next_round()
    sent, cpu = 0, time.process_time()
    for _ in range(done, protocol.rounds):
        sent += role.serve(dealer, computing)
    cpu = time.process_time() - cpu
    network.close(timeout=None)  # its part is over; stay linked so that a failure reaches it too
    return {
        "party": name,
        "role": "dealer",
        "rounds": protocol.rounds,
        "resumed_after": done,
        "material_bytes": sent,
        "cpu_seconds_per_round": cpu / max(protocol.rounds - done, 1),
    }


def _run_computing(deployment: Deployment[MPCProtocol], name: str, network: TlsNetwork, resume: bool) -> dict:
    from privbandits.mpc.dealer import RemoteDealer
    from privbandits.mpc.sharing import ArithmeticShares
    from privbandits.protocols.mpc_bandit import PrivateEpsilonGreedy, PrivateSeeds

    protocol = deployment.protocol
    data = load_computing(deployment, name)
    learner = PrivateEpsilonGreedy(
        config_of(deployment),
        network=network,
        seeds=PrivateSeeds(None, None, {name: data.share_seed}),
        parties=deployment.names("computing"),
        local=name,
        dealer=deployment.names("dealer")[0],
    )
    engine, rng = learner.engine, learner.engine.input_rng(name)
    done = 0
    if resume:
        done, (arrays, meta) = _offer_and_agree(deployment, engine.party)
        learner.inverse = ArithmeticShares(arrays["inverse"], meta["scale"], engine.leads)
        learner.b = ArithmeticShares(arrays["b"], meta["scale"], engine.leads)
        rng.bit_generator.state = meta["rng"]
        learner.rounds = done
        assert isinstance(engine.dealer, RemoteDealer), "a computing party in its own process has a RemoteDealer"
        engine.dealer.skip_to(done)

    def save() -> None:
        arrays = {"inverse": learner.inverse.shares, "b": learner.b.shares}
        meta = {"scale": learner.inverse.scale, "rng": rng.bit_generator.state}
        save_state(deployment, name, learner.rounds, arrays, meta)

    if not resume:
        save()
    start, cpu, block = time.perf_counter(), time.process_time(), {}
    every = deployment.checkpoint_every
    for t in range(done, protocol.rounds):
        block[name] = data.contexts[t]
        learner.play(block)
        if (t + 1) % every == 0 or t + 1 == protocol.rounds:
            save()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    network.close()
    return {
        "party": name,
        "role": "computing",
        "rounds": protocol.rounds,
        "resumed_after": done,
        "seconds_per_round": seconds / max(protocol.rounds - done, 1),
        "cpu_seconds_per_round": cpu / max(protocol.rounds - done, 1),
    }


def _run_environment(deployment, name, network, resume, on_round) -> dict:
    from privbandits.privacy import epsilon_greedy
    from privbandits.protocols.mpc_bandit import PullerRewarder

    protocol, config = deployment.protocol, config_of(deployment)
    data = load_environment(deployment, name)
    party = PullerRewarder(config, network, deployment.names("computing"), data.share_seed)
    party.setup()
    rng = party.engine.input_rng(name)
    arms: list[int] = []
    done = 0
    log = checkpoint.decision_log(deployment, name)
    if resume:
        done, (_, meta) = _offer_and_agree(deployment, party.engine.party)
        arms = log.restore(done, config.n_arms)
        rng.bit_generator.state = meta["rng"]
        party.rounds, party.invalid_openings = done, meta["invalid_openings"]
        for index in range(done):  # the privacy ledger: one opening per round played
            epsilon_greedy.record_action(party.ledger, config.n_arms, config.epsilon, index)

    def save() -> None:
        log.append(arms)  # first: the checkpoint counts them
        meta = {"rng": rng.bit_generator.state, "invalid_openings": party.invalid_openings}
        save_state(deployment, name, len(arms), {}, meta)

    if not resume:
        log.start()
        save()
    start, cpu = time.perf_counter(), time.process_time()
    every = deployment.checkpoint_every
    for t in range(done, protocol.rounds):
        arms.append(party.play(data.rewards[t].__getitem__))
        if (t + 1) % every == 0 or t + 1 == protocol.rounds:
            save()
        if on_round is not None:
            on_round(t + 1, protocol.rounds)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    network.close()
    chosen = np.asarray(arms, dtype=np.int64)
    return {
        "party": name,
        "role": "environment",
        "rounds": protocol.rounds,
        "resumed_after": done,
        "arms": chosen.tolist(),
        "cumulative_reward": float(data.rewards[np.arange(len(chosen)), chosen].sum()),
        "invalid_openings": party.invalid_openings,
        "privacy_loss_per_opening": config.privacy_loss,
        "openings": len(party.ledger.entries),
        "seconds_per_round": seconds / max(protocol.rounds - done, 1),
        "cpu_seconds_per_round": cpu / max(protocol.rounds - done, 1),
    }


run_party = entropy.recorded(
    play_by_role({"dealer": _run_dealer, "computing": _run_computing, "environment": _run_environment})
)
"""Play party ``name``'s part of the session on ``network`` (already connected)."""

DEPLOYABLE = PartyFunctions(
    MPCProtocol, (__name__, *PARTY_IMPORTS), run_party, receive_deadline,
    data=write_synthetic_data, in_memory=run_in_memory, serving="privbandits.deploy.mpc_bandit.served:serving_role",
)  # fmt: skip
"""The MPC protocol's party code (the registry loads it through its package's ``PARTY_CODE``)."""
