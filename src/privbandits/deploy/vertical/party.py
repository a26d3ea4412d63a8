"""Vertical O3M (VFUCB / VFTS) as separate party processes, and the in-memory run it must equal.

Each party runs the unchanged party classes of :mod:`privbandits.protocols.vertical.core` on its
own :class:`~privbandits.comm.TlsNetwork` and reads only its own data file (``.npz``):

* passive party: ``users`` (n,) int64 and ``features`` (n, K, d_j) float64: row i holds the
  K candidate items of user ``users[i]``, in the party's own feature block. A user it lacks
  is answered with zeros (spec §8.4.11), as in simulation.
* active party: ``users``, ``features`` (n, K, d_1) and ``rewards`` (n, K); round t serves
  user ``users[t]`` and observes ``rewards[t, arm]`` for the arm it chose. An optional
  ``expected_rewards`` (n, K) (simulation truth) lets the report compute regret.
* mask generator: optionally ``mask_seed`` (uint64 words), its *private* seed for Q (the
  deployment file is shared with the active party, so Q must never derive from it); without
  a file it draws the seed from OS entropy and keeps it in its checkpoint. It sends each
  block once and stays linked until the session ends (so that it, too, learns of a failure).

Synthetic data come from ``[seed, 0]`` (numpy seed sequences). VFTS samples at the active party
from fresh OS entropy (:mod:`privbandits.deploy.entropy`; its generator's state is in the active
party's checkpoint, so ``--resume`` continues it), or, with the deployment's ``reproducible =
true``, from ``[seed, 2]``; :func:`run_in_memory` uses the same and the mask generator's seed
file, so in reproducible mode (and always for VFUCB, which draws nothing) decisions agree. The
mask seed and the secure-aggregation pair seeds come from OS entropy in every mode.

Prefetch (``protocol.prefetch``, default 1): the active party may send the next rounds' requests
ahead of their rounds, since the users it serves come from its file and a request depends on no
decision; the passive parties then answer while it learns. It tops up in chunks of half the window,
written together as soon as they are made (:meth:`~privbandits.comm.Network.flush`), and the passive
parties write the answers to requests they read together in one call
(:meth:`~privbandits.comm.TlsNetwork.batch`). Each request is still sent at the start of a
round's segment (depth 1), so messages, bytes per link and each round's communication rounds are
unchanged; a request link's own round count is lower (several rounds' requests share one).

Chunked requests (``protocol.chunk_requests``, with prefetch): each top-up goes to a passive party
as one :class:`~privbandits.protocols.vertical.core.RoundRequests` message, answered with one message
holding every round's answer, which the active party takes apart round by round. The decisions and
the payload bytes per link are the in-memory run's; the messages on a request or answer link fall
from one per round to one per top-up (a passive party learns nothing it did not learn with prefetch:
the same users, as early).

Checkpoints and ``--resume``: the active party saves its learner and decisions after setup
and every ``checkpoint_every`` rounds (atomically). Resumed, every party runs setup again
(the mask generator re-derives the same Q from its seed; secure-aggregation pair seeds are
drawn afresh, their masks still cancel), the active party tells the passive parties the round
it resumes from (a ``resume`` phase), and the rounds continue from there. Passive parties
and the mask generator keep no per-round state, so the active party's last checkpoint is the
last round every party completed.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from privbandits.comm import ROUND, SETUP, InMemoryNetwork, Message, Network, TlsNetwork, message
from privbandits.deploy import checkpoint, entropy
from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.files import read_arrays, write_private_npz
from privbandits.deploy.registry import PartyFunctions, deadline_by_role, play_by_role
from privbandits.deploy.vertical.section import VerticalProtocol

PARTY_IMPORTS = ("privbandits.protocols.vertical.core",)
"""Modules the parties import when they run (not when the CLI loads this one): a fork server preloads them."""

DATA_STREAM, LEARNER_STREAM = 0, 2
RESUME = "resume"
"""Phase of a resumed session in which the active party says where the rounds continue."""


@message("deploy.vertical.resume_at")
class ResumeAt(Message):
    """AP → PP, only in a resumed session: rounds 1..``round`` are done; continue with the next."""

    round: int


def stream(seed: int, purpose: int) -> np.random.Generator:
    return np.random.default_rng([seed, purpose])


@dataclass(frozen=True)
class PartyData:
    """One party's local file, checked."""

    users: np.ndarray
    features: np.ndarray
    rewards: np.ndarray | None = None
    expected_rewards: np.ndarray | None = None

    def index(self) -> dict[int, int]:
        return {int(user): row for row, user in enumerate(self.users)}

    @property
    def reward_table(self) -> np.ndarray:
        """``rewards``, which the active party's file holds (a passive party's has none)."""
        if self.rewards is None:
            raise DeploymentError("this party's file holds no rewards: only the active party's does")
        return self.rewards


def load_party_data(path: Path, *, role: str, n_arms: int, block: int) -> PartyData:
    """Read and check a party's ``.npz`` file (shapes, dtypes, unique users, finite values)."""
    wanted = ["users", "features"] + (["rewards"] if role == "active" else [])
    arrays = read_arrays(path, f"{role} party", wanted)
    users, features = arrays["users"], arrays["features"]
    if users.ndim != 1 or users.dtype.kind not in "iu":
        raise DeploymentError(f"{path}: users must be a 1-d integer array, got {users.dtype} {users.shape}")
    if len(np.unique(users)) != len(users):
        raise DeploymentError(f"{path}: users must be unique")
    if features.shape != (len(users), n_arms, block):
        raise DeploymentError(
            f"{path}: features must have shape (users, n_arms, block) = {(len(users), n_arms, block)}, "
            f"got {features.shape}"
        )
    if not np.all(np.isfinite(features)):
        raise DeploymentError(f"{path}: features must be finite")
    extra = {}
    for key in ("rewards", "expected_rewards"):
        if key in arrays and role == "active":
            if arrays[key].shape != (len(users), n_arms):
                raise DeploymentError(f"{path}: {key} must have shape {(len(users), n_arms)}, got {arrays[key].shape}")
            extra[key] = np.asarray(arrays[key], dtype=np.float64)
    return PartyData(users.astype(np.int64), np.ascontiguousarray(features, dtype=np.float64), **extra)


def blocks(deployment: Deployment[VerticalProtocol]) -> dict[str, int]:
    """Feature block size of each data-holding party (active first, passive parties in file order)."""
    holders = deployment.names("active") + deployment.names("passive")
    return dict(zip(holders, deployment.protocol.partition, strict=True))


def load_all(deployment: Deployment[VerticalProtocol], names: Sequence[str] | None = None) -> dict[str, PartyData]:
    sizes = blocks(deployment)
    wanted = names if names is not None else list(sizes)
    return {
        name: load_party_data(
            deployment.data_file(name),
            role=deployment.parties[name].role,
            n_arms=deployment.protocol.n_arms,
            block=sizes[name],
        )
        for name in wanted
    }


def write_synthetic_data(
    deployment: Deployment[VerticalProtocol], *, lacking: Mapping[str, Sequence[int]] | None = None
) -> dict[str, Path]:
    """Each data holder's file for the vertical paper's synthetic problem (§5.1), one user per round.

    ``lacking[name]`` lists users that passive party ``name`` does not have (dropped from its file).
    """
    from privbandits.envs import LinearGaussianBandit

    protocol = deployment.protocol
    rng = stream(protocol.seed, DATA_STREAM)
    env = LinearGaussianBandit(dim=protocol.dim, n_arms=protocol.n_arms)
    env.reset(rng)
    contexts = np.empty((protocol.rounds, protocol.n_arms, protocol.dim))
    expected = np.empty((protocol.rounds, protocol.n_arms))
    for t in range(protocol.rounds):
        contexts[t], expected[t] = env.next_round()
    rewards = expected + env.noise_std * rng.standard_normal(expected.shape)
    users = np.arange(1, protocol.rounds + 1, dtype=np.int64)
    written, start = {}, 0
    for name, size in blocks(deployment).items():
        keep = ~np.isin(users, np.asarray((lacking or {}).get(name, []), dtype=np.int64))
        arrays = {"users": users[keep], "features": contexts[keep, :, start : start + size]}
        if deployment.parties[name].role == "active":
            if not keep.all():
                raise ValueError("the active party knows every user it serves")
            arrays.update(rewards=rewards, expected_rewards=expected)
        written[name] = write_private_npz(deployment.data_file(name), **arrays)
        start += size
    generator = deployment.names("mask_generator")[0]
    path = deployment.parties[generator].data
    if path is not None:  # the mask generator's private seed, from OS entropy
        written[generator] = write_private_npz(path, mask_seed=np.frombuffer(secrets.token_bytes(32), dtype=np.uint64))
    return written


def load_mask_seed(path: Path) -> np.ndarray:
    """The mask generator's private seed (uint64 words) from its data file."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            seed = archive["mask_seed"]
    except FileNotFoundError:
        raise DeploymentError(f"mask generator data file {path} does not exist") from None
    except (KeyError, OSError, ValueError) as exc:
        raise DeploymentError(f"{path}: needs a 'mask_seed' array of uint64 words ({exc})") from None
    if seed.dtype != np.uint64 or seed.ndim != 1 or len(seed) < 2:
        raise DeploymentError(f"{path}: mask_seed must be at least 2 uint64 words, got {seed.dtype} {seed.shape}")
    return seed


def mask_from_seed(protocol: VerticalProtocol, seed: np.ndarray) -> np.ndarray:
    from privbandits.privacy.masks import draw_mask

    return draw_mask(protocol.partition, "seeded", np.random.default_rng([int(word) for word in seed]))


def make_learner(protocol: VerticalProtocol, rng: np.random.Generator | None = None):
    """The active party's learner; VFTS samples from ``rng`` (default ``[seed, 2]``, the reproducible stream)."""
    from privbandits.linear import LinTS, LinUCB

    common = {"layout": "shared", "reg": protocol.reg, "tie_break": "lowest"}
    if protocol.policy == "vfucb":
        return LinUCB(protocol.n_arms, protocol.dim, alpha=protocol.alpha, **common)
    rng = stream(protocol.seed, LEARNER_STREAM) if rng is None else rng
    return LinTS(protocol.n_arms, protocol.dim, v=protocol.v, rng=rng, **common)


def learner_rng(deployment: Deployment[VerticalProtocol], name: str | None) -> np.random.Generator:
    """VFTS's sampling generator at the active party: OS entropy, or ``[seed, 2]`` in reproducible mode."""
    seed = np.random.SeedSequence([deployment.protocol.seed, LEARNER_STREAM])
    return entropy.generator(deployment, name, seed)


def warm_up(protocol: VerticalProtocol) -> None:
    """One round on a throwaway learner, so that timed rounds leave out the kernels' one-time
    compile or cache load (on first use in a process)."""
    learner = make_learner(protocol)
    contexts = np.zeros((protocol.n_arms, protocol.dim))
    learner.update(contexts, learner.select(contexts), 0.0)


class UserFeatures:
    """A party's feature source: its rows for the requested user and items, or None for an unknown user."""

    def __init__(self, data: PartyData) -> None:
        self.data, self._rows, self._features = data, data.index(), data.features

    def __call__(self, request) -> np.ndarray | None:
        row = self._rows.get(int(request.user))
        return None if row is None else self._features[row].take(request.items, axis=0)  # 4x faster than [items]


@dataclass
class Run:
    """What the active party decided, and the rewards it saw."""

    users: np.ndarray
    arms: np.ndarray
    rewards: np.ndarray
    regret: np.ndarray | None
    seconds: float = 0.0
    """Wall time of the rounds (setup excluded)."""


def _run_summary(active: PartyData, arms: list[int], seconds: float) -> Run:
    n = len(arms)
    chosen = np.asarray(arms, dtype=np.int64)
    rewards = active.reward_table[np.arange(n), chosen]
    regret = None
    if active.expected_rewards is not None:
        best = active.expected_rewards[:n].max(axis=1)
        regret = best - active.expected_rewards[np.arange(n), chosen]
    return Run(active.users[:n], chosen, rewards, regret, seconds)


def in_memory_names(deployment: Deployment[VerticalProtocol]) -> dict[str, str]:
    """Deployment party name → the name :class:`VerticalFederatedBandit` gives the same role."""
    names = {deployment.names("mask_generator")[0]: "mask_generator", deployment.names("active")[0]: "active"}
    for index, name in enumerate(deployment.names("passive")):
        names[name] = f"passive{index + 2}"
    return names


def run_in_memory(deployment: Deployment[VerticalProtocol], network: Network | None = None) -> tuple[Run, Network]:
    """The same session in one process (every party's data read here), for comparison."""
    from privbandits.protocols.vertical.core import VerticalFederatedBandit

    protocol = deployment.protocol
    generator = deployment.names("mask_generator")[0]
    if deployment.parties[generator].data is None:
        raise DeploymentError(
            f"the in-memory reference needs the mask generator's seed file (parties.{generator}.data)"
        )
    data = load_all(deployment)
    holders = list(data)
    active = data[holders[0]]
    rows = {name: party.index() for name, party in data.items()}
    network = network if network is not None else InMemoryNetwork()
    mask = mask_from_seed(protocol, load_mask_seed(deployment.data_file(generator)))
    bandit = VerticalFederatedBandit(
        protocol.partition,
        make_learner(protocol, learner_rng(deployment, None)),
        mask=mask,
        network=network,
        secure_aggregation=protocol.secure_aggregation,
        allow_single_feature_parties=protocol.allow_single_feature_parties,
    )
    rounds = _check_rounds(protocol, active)
    contexts = np.zeros((protocol.n_arms, protocol.dim))
    starts = np.cumsum([0] + protocol.partition)
    arms = []
    warm_up(protocol)
    start = time.perf_counter()
    for t in range(rounds):
        user = int(active.users[t])
        present = []
        for j, name in enumerate(holders):
            row = rows[name].get(user)
            present.append(row is not None)
            contexts[:, starts[j] : starts[j + 1]] = 0.0 if row is None else data[name].features[row]
        arm = bandit.select(contexts, user=user, present=present)
        bandit.update(contexts, arm, float(active.reward_table[t, arm]))
        arms.append(arm)
    return _run_summary(active, arms, time.perf_counter() - start), network


receive_deadline = deadline_by_role({"passive": 2.0})
"""Seconds a party waits for a message before it counts its peer as lost: the active party waits ``deadline_s`` for
each answer; a passive party twice that for the next request: if another passive party stalls, the active party
(which waits for it) reports the stall and tells everyone, before the passive parties would blame it."""


def _run_generator(deployment: Deployment[VerticalProtocol], name: str, network: TlsNetwork, resume: bool) -> dict:
    from privbandits.protocols.vertical.core import MaskGenerator

    entry, path = deployment.parties[name], deployment.checkpoint_path(name)
    if entry.data is not None:
        seed = load_mask_seed(entry.data)
    elif resume:
        saved = checkpoint.load(path)
        if saved is None:
            raise DeploymentError(f"no checkpoint at {path} to resume from (start the session afresh)")
        seed = saved[0]["mask_seed"]
    else:
        seed = np.frombuffer(secrets.token_bytes(32), dtype=np.uint64)
        checkpoint.save(path, {"mask_seed": seed}, {"digest": deployment.protocol_digest()})
    party = MaskGenerator(name, network, deployment.protocol.partition, mask_from_seed(deployment.protocol, seed))
    with network.phase(SETUP):
        party.distribute(deployment.names("active") + deployment.names("passive"))
    network.close(timeout=None)  # its part is over; stay linked so a failure reaches it too
    return {"party": name, "role": "mask_generator"}


def _run_passive(deployment: Deployment[VerticalProtocol], name: str, network: TlsNetwork, resume: bool) -> dict:
    from privbandits.protocols.vertical.core import PassiveParty

    protocol = deployment.protocol
    active, passive = deployment.names("active")[0], deployment.names("passive")
    data = load_all(deployment, [name])[name]
    party = PassiveParty(
        name, network, UserFeatures(data), active=active, generator=deployment.names("mask_generator")[0]
    )
    index = passive.index(name)
    with network.phase(SETUP):
        party.receive_mask()
        if protocol.secure_aggregation:
            party.offer_pair_seeds(passive[index + 1 :])
            party.accept_pair_seeds(passive[:index])
    done = 0
    if resume:
        with network.phase(RESUME):
            done = party.receive(ResumeAt, active).round
        if not 0 <= done <= protocol.rounds:
            raise DeploymentError(f"{active!r} resumes after round {done}, outside 0..{protocol.rounds}")
    with network.batch():  # answers to requests read together leave together (see protocol.prefetch)
        served = done
        while served < protocol.rounds:
            with network.phase(ROUND):
                served += party.serve_chunk() if protocol.chunk_requests else party.serve_round()
    network.close()
    return {
        "party": name,
        "role": "passive",
        "rounds": protocol.rounds,
        "resumed_after": done,
        "users_known": len(data.users),
    }


def _save_active(
    deployment: Deployment[VerticalProtocol], name: str, learner, arms: list[int], log: checkpoint.DecisionLog
) -> None:
    log.append(arms)  # first: the checkpoint below counts them
    arrays, meta = checkpoint.capture(learner)
    arrays = {f"learner.{key}": value for key, value in arrays.items()}
    meta = {"learner": meta, "round": len(arms), "digest": deployment.protocol_digest()}
    checkpoint.save(deployment.checkpoint_path(name), arrays, meta)


def _load_active(
    deployment: Deployment[VerticalProtocol], name: str, learner, log: checkpoint.DecisionLog
) -> list[int]:
    arrays, meta = checkpoint.resume(deployment, name)
    learned = {key.removeprefix("learner."): value for key, value in arrays.items() if key.startswith("learner.")}
    checkpoint.restore(learner, learned, meta["learner"])
    return log.restore(meta["round"], deployment.protocol.n_arms)


def _run_active(deployment, name, network, resume, on_round) -> dict:
    from privbandits.protocols.vertical.core import ActiveParty, RoundRequest

    protocol = deployment.protocol
    passive = deployment.names("passive")
    data = load_all(deployment, [name])[name]
    rounds = _check_rounds(protocol, data)
    learner = make_learner(protocol, learner_rng(deployment, name))
    log = checkpoint.decision_log(deployment, name)
    arms = _load_active(deployment, name, learner, log) if resume else []
    party = ActiveParty(
        name,
        network,
        learner,
        UserFeatures(data),
        passive=passive,
        generator=deployment.names("mask_generator")[0],
        secure_aggregation=protocol.secure_aggregation,
    )
    with network.phase(SETUP):
        party.receive_mask()
    resumed_after = len(arms)
    if resume:
        with network.phase(RESUME):
            for other in passive:
                party.send(other, ResumeAt(resumed_after))
    else:
        log.start()
        _save_active(deployment, name, learner, arms, log)
    items = np.arange(protocol.n_arms, dtype=np.int64)
    every = deployment.checkpoint_every
    in_flight: deque[RoundRequest] = deque()
    requested = resumed_after  # rounds 1..requested have been asked for
    refill = max(1, protocol.prefetch // 2)  # top up in chunks, written together (batch)
    warm_up(protocol)
    start = time.perf_counter()
    with network.batch():  # held requests leave together when the party waits for answers
        for t in range(resumed_after, rounds):
            with network.phase(ROUND):
                # requests first, so each has depth 1 in its segment and the ledger is as without prefetch
                if requested - t < refill:
                    end = min(rounds, t + protocol.prefetch)
                    in_flight.extend(_request_ahead(party, data, items, requested, end, protocol.chunk_requests))
                    requested = end
                    network.flush()  # the passive parties start on them now, while this party works
                party.begin_round(in_flight.popleft())
                for other in passive:
                    party.absorb(other)
                arm = party.choose()
            party.learn(arm, float(data.reward_table[t, arm]))
            arms.append(arm)
            if (t + 1) % every == 0 or t + 1 == rounds:
                _save_active(deployment, name, learner, arms, log)
            if on_round is not None:
                on_round(t + 1, rounds)
    seconds = time.perf_counter() - start
    network.close()
    run = _run_summary(data, arms, seconds)
    summary = {
        "party": name,
        "role": "active",
        "rounds": rounds,
        "resumed_after": resumed_after,
        "arms": run.arms.tolist(),
        "cumulative_reward": float(run.rewards.sum()),
        "seconds_per_round": seconds / max(rounds - resumed_after, 1),
    }
    if run.regret is not None:
        summary["cumulative_regret"] = float(run.regret.sum())
    return summary


def _request_ahead(party, data: PartyData, items: np.ndarray, done: int, end: int, chunked: bool) -> list:
    """Ask every passive party for rounds ``done + 1 .. end`` (their requests, returned): a message per round, or
    one per passive party for them all (``protocol.chunk_requests``)."""
    from privbandits.protocols.vertical.core import RoundRequest

    made = [RoundRequest(t + 1, int(data.users[t]), items) for t in range(done, end)]
    if chunked and made:
        party.send_requests(made)
    else:
        for request in made:
            party.send_request(request)
    return made


def _check_rounds(protocol: VerticalProtocol, active: PartyData) -> int:
    """The session serves one user of the active party's file per round, so it needs ``rounds`` of them."""
    if len(active.users) < protocol.rounds:
        raise DeploymentError(
            f"protocol.rounds is {protocol.rounds}, but the active party's data has only {len(active.users)} users"
        )
    return protocol.rounds


run_party = entropy.recorded(
    play_by_role({"mask_generator": _run_generator, "passive": _run_passive, "active": _run_active})
)
"""Play party ``name``'s part of the session on ``network`` (already connected)."""


DEPLOYABLE = PartyFunctions(
    VerticalProtocol, (__name__, *PARTY_IMPORTS), run_party, receive_deadline,
    data=write_synthetic_data, in_memory=run_in_memory, serving="privbandits.deploy.vertical.serving:serving_role",
)  # fmt: skip
"""The vertical protocol's party code (the registry loads it through its package's ``PARTY_CODE``)."""
