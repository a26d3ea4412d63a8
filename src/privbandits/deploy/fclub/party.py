"""FCLUB as separate party processes: the users, the local servers and the global server (issue 17, step 3).

Each party runs the party classes of :mod:`privbandits.protocols.fclub` on its own
:class:`~privbandits.comm.TlsNetwork`:

* ``local_server`` ℓ (named ``local0``, ``local1``, ...): serves a contiguous block of the users
  (:func:`~privbandits.envs.clustered.assign_groups`, as the experiments do), keeps their raw
  statistics, detects its local clusters and sends phase uploads and uploads, privatized when
  the algorithm is private, before anything leaves the process. It is linked to the users and
  the global server only.
* ``global_server`` (named ``global``): merges local clusters, pushes renewals and downloads. It
  only ever receives the local servers' :class:`~privbandits.protocols.fclub.PhaseUpload`,
  :class:`~privbandits.protocols.fclub.Upload` and
  :class:`~privbandits.protocols.fclub.DownloadCheck` messages.
* ``users``: the users' devices. It draws the synthetic environment (spec §6.2) and, round by
  round, sends the arriving user's contexts to the user's local server (:class:`Arrival`),
  returns the chosen arm's reward (:class:`Feedback`) and scores the choice. It keeps the public
  clock of §3.2: at t = 2^s − 1 (every round for the reference code's FCLUB) it tells the global
  server and every local server that a phase starts (:class:`PhaseStart`).

Reproducing the in-memory run. The asynchronous protocol is played in lock-step, in the order of
:class:`~privbandits.protocols.fclub.FederatedClusteredBandit`: the users start round t + 1 only
once round t's local server says it is served (:class:`Served`), which it says only after the
global server has confirmed its upload (:class:`UploadDone`, sent once every download it caused
is applied: :class:`Applied`) or its download check (:class:`Checked`). These sequencing messages
travel in phases of their own (``users``, ``schedule``, ``sequence``), outside the paper's count;
the protocol's messages keep their phases (``detect``, ``phase_end``, ``async``, ``check``) and
their bytes, so the traffic of those phases equals the in-memory run's link by link. The users
party draws the synthetic environment from ``protocol.seed`` as
:func:`~privbandits.protocols.fclub.run_fclub` does (the first spawned stream: the demo's data,
public by construction, as P2B's ``data_seed``). Each local server draws its privatizers' noise
and its tie-breaks from fresh OS entropy (:mod:`privbandits.deploy.entropy`), so the global
server, which holds the file, cannot regenerate and remove that noise. With the deployment's
``reproducible = true``, local server ℓ derives them from the ℓ-th child of the second stream,
as ``run_fclub`` does, so regret, communication and the local servers' releases equal
:func:`run_in_memory`'s; anyone holding the file can then recompute the noise
(``tests/test_deploy_attacks.py``): for tests and demos only.

Schedules (the file's ``protocol.schedule``). ``lock-step`` (the default) is the order above, and equals
the in-memory run. ``free-running`` drops the sequencing: a local server sends its uploads and download
checks and goes on with its next round without waiting for the global server (no :class:`UploadDone`,
:class:`Applied`, :class:`Checked`, :class:`Served`), the global server sends the downloads uploads make due
without waiting for them to be applied (once no further upload is already waiting, so that under a backlog
one download carries several uploads; those due to one local server go in one :class:`Downloads` message), and
the users keep a round in flight at each local server, at most :data:`WINDOW` in all (a round's contexts go out
before the previous rounds' arms are back). A round's reward travels with its local server's next round
(:class:`RewardAndArrival`), or alone (:class:`Feedback`) before a phase start and at the end: one message and one
wake-up of the local server per round instead of two. A local server learns each reward before it
serves its next round, so its own choices see every reward as in lock-step; the upload a reward makes due (Eq. 5)
leaves when the server's next round arrives, so only the local servers' view of each other lags. A
phase start stays a barrier: the users send :class:`PhaseStart` once every earlier round is answered, and a
local server serves no round of the new phase before the global server's :class:`PhaseEnd` and renewals.
Messages that cross a phase start, with the counts each party records (``crossings`` in its result):

* an upload or download check the global server reads after the users' :class:`PhaseStart` but that its
  local server sent before its phase uploads belongs to the old phase: it is applied to the old global
  statistics before the merge, and the downloads it makes due are sent (``crossed_uploads``);
* a download a local server reads after its own detection but the global server sent before its
  :class:`PhaseEnd` belongs to the old phase: it is dropped when a renewal replaces the cluster's copy, or
  when the copy was rebuilt from its phase upload (``rebuild_local_copies``), since the copy already holds
  what it carries (``stale_downloads``); otherwise (no renewal, the same clusters) it is applied after the
  detection (``crossed_downloads``);
* the session ends with a handshake: each local server sends the global server :class:`Finish` and applies
  the downloads still coming until the global server's own :class:`Finish` (``late_downloads``), which it
  sends once every local server has finished; nothing is lost at the end.

What differs from lock-step is when a download reaches its local server (a few rounds later: until then
the local copy S is smaller, so Eq. 5 fires sooner and there are more uploads), and the order in which the
global server reads uploads from different local servers (which decides Eq. 6's downloads); a session is
therefore not reproducible run to run. ``benchmarks/fclub_free_running.py`` compares the two schedules'
regret over seeds. With a phase start every round (the synchronous FCLUB preset) every round is a barrier
and free-running equals lock-step (``tests/test_deploy_fclub_free_running.py``).

A lost local server (killed, stalled past the deadline, or failed): the global server names it
(its result's ``lost`` and outcome), drops its link and its clusters from later merges, and
delivers no more messages to it; the users stop sending it users (their rounds are counted as
unserved); the other local servers finish. A lost global server or users party ends the session
for everyone, as in the other deployments. Every party checkpoints its state at each phase start, and a
session ended by a lost party goes on with ``--resume`` (:mod:`privbandits.deploy.fclub.resume`).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable

import numpy as np

from privbandits.comm import Message, Network, PeerLost, ProtocolError, TlsNetwork, message
from privbandits.deploy import entropy
from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.fclub.section import FCLUBProtocol
from privbandits.deploy.registry import PartyFunctions
from privbandits.envs.clustered import ClusteredLinearBandit
from privbandits.protocols.fclub.accounting import Communication
from privbandits.protocols.fclub.config import Calibration
from privbandits.protocols.fclub.messages import Download, PhaseUpload, Upload
from privbandits.protocols.fclub.rounds import play

USERS, SCHEDULE, SEQUENCE = "users", "schedule", "sequence"
"""Phases of the deployment's sequencing messages (the in-memory driver's call order), outside the protocol."""


@message("deploy.fclub.arrival")
class Arrival(Message):
    """Users → the user's local server: round ``t``'s user (a global id) and its contexts (K × d)."""

    t: int
    user: int
    contexts: np.ndarray


@message("deploy.fclub.choice")
class Choice(Message):
    """Local server → users: the arm recommended."""

    arm: int


@message("deploy.fclub.feedback")
class Feedback(Message):
    """Users → local server: the reward of the recommended arm."""

    reward: float


@message("deploy.fclub.reward_and_arrival")
class RewardAndArrival(Message):
    """Free-running, users → local server: the reward of the arm it chose in its previous round, then round ``t``'s
    user and contexts (a :class:`Feedback` and an :class:`Arrival` in one message)."""

    reward: float
    t: int
    user: int
    contexts: np.ndarray


@message("deploy.fclub.downloads")
class Downloads(Message):
    """Free-running, global → a local server: the downloads due to its local clusters at once, each what a
    :class:`~privbandits.protocols.fclub.Download` carries (``clusters[j]``, ``grams[j]``, ``moments[j]``,
    ``counts[j]``), in the order they fell due."""

    clusters: np.ndarray
    grams: np.ndarray
    moments: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, downloads: list[Download]) -> Downloads:
        first = downloads[0]
        grams = np.empty((len(downloads), *first.gram.shape))
        moments = np.empty((len(downloads), *first.moment.shape))
        for j, download in enumerate(downloads):  # (np.stack costs more for the few a message carries)
            grams[j], moments[j] = download.gram, download.moment
        clusters = np.array([d.cluster for d in downloads], dtype=np.int64)
        return cls(clusters, grams, moments, np.array([d.count for d in downloads], dtype=np.int64))

    def entries(self, dim: int) -> list[Download]:
        """The downloads carried, checked (a malformed message is refused, naming what is wrong)."""
        k = len(self.clusters)
        shapes = [(self.clusters, (k,), np.int64), (self.grams, (k, dim, dim), np.float64),
                  (self.moments, (k, dim), np.float64), (self.counts, (k,), np.int64)]  # fmt: skip
        for name, (array, shape, dtype) in zip(("clusters", "grams", "moments", "counts"), shapes, strict=True):
            if array.shape != shape or array.dtype != dtype or (dtype == np.float64 and not np.isfinite(array).all()):
                raise ProtocolError(
                    f"downloads: {name} is {array.dtype} of shape {array.shape}; expected finite {np.dtype(dtype)} of "
                    f"shape {shape} ({k} downloads, d = {dim})"
                )
        return [Download(int(c), self.grams[j], self.moments[j], int(self.counts[j])) for j, c in
                enumerate(self.clusters)]  # fmt: skip


@message("deploy.fclub.served")
class Served(Message):
    """Local server → users: round ``t`` is done (its upload confirmed, or its download check answered)."""

    t: int


@message("deploy.fclub.phase_start")
class PhaseStart(Message):
    """Users → the global server and every local server: detection runs before round ``t`` (§3.2)."""

    t: int


@message("deploy.fclub.finish")
class Finish(Message):
    """Users → every party, then each local server → the global server: the session's ``rounds`` are over; free-running,
    the global server's to each local server once all have finished (no more downloads follow)."""

    rounds: int


@message("deploy.fclub.applied")
class Applied(Message):
    """Local server → global: a :class:`~privbandits.protocols.fclub.Download` is applied."""


@message("deploy.fclub.upload_done")
class UploadDone(Message):
    """Global → the uploading local server: the upload is absorbed and every download it caused is applied
    (how many is not said: a local server learns nothing of the other members from it)."""


@message("deploy.fclub.checked")
class Checked(Message):
    """Global → local server: its :class:`~privbandits.protocols.fclub.DownloadCheck` is counted."""


WINDOW = 16
"""Free-running: the most rounds the users have in flight (contexts sent, arm not yet back)."""
NOISE_WARNING = "FCLUB: privatizer noise exceeded"


# -- the run the parties share -----------------------------------------------------------------------
def _protocol(deployment: Deployment[FCLUBProtocol]) -> FCLUBProtocol:
    protocol = deployment.protocol
    if not isinstance(protocol, FCLUBProtocol):
        raise DeploymentError(f"protocol.name must be 'fclub' here, got {protocol.name!r}")
    return protocol


def environment_of(deployment: Deployment[FCLUBProtocol]) -> ClusteredLinearBandit:
    """The users' synthetic environment (spec §6.2), as the experiments build it from the same sizes."""
    protocol = _protocol(deployment)
    return ClusteredLinearBandit(protocol.n_users, protocol.n_clusters, protocol.dim, protocol.n_arms,
                                 construction=protocol.construction)  # fmt: skip


def config_of(deployment: Deployment[FCLUBProtocol]):
    """The algorithm's :class:`~privbandits.protocols.fclub.config.FCLUBConfig` (the experiments' presets)."""
    return _protocol(deployment).fclub_config()


def _seeds(deployment: Deployment[FCLUBProtocol]) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """The environment's seed and the protocol's, spawned from ``protocol.seed`` as
    :func:`~privbandits.protocols.fclub.run_fclub` does (the protocol's used only in reproducible mode)."""
    environment, protocol = np.random.SeedSequence(_protocol(deployment).seed).spawn(2)
    return environment, protocol


def _streams(deployment: Deployment[FCLUBProtocol]) -> tuple[np.random.Generator, list[np.random.Generator]]:
    """The environment's generator and each local server's in reproducible mode, as ``run_fclub``."""
    environment, protocol = _seeds(deployment)
    servers = protocol.spawn(len(deployment.names("local_server")))
    return np.random.default_rng(environment), [np.random.default_rng(seed) for seed in servers]


def local_rng(deployment: Deployment[FCLUBProtocol], name: str) -> np.random.Generator:
    """Local server ``name``'s generator (its privatizers' noise, its tie-breaks): OS entropy, or in
    reproducible mode ``run_fclub``'s."""
    servers = deployment.names("local_server")
    return entropy.generator(deployment, name, _seeds(deployment)[1].spawn(len(servers))[servers.index(name)])


def _server_of_user(deployment: Deployment[FCLUBProtocol]) -> np.ndarray:
    from privbandits.envs.clustered import assign_groups

    return assign_groups(_protocol(deployment).n_users, len(deployment.names("local_server")), remainder_last=True)


def _calibration(deployment: Deployment[FCLUBProtocol]):
    protocol = _protocol(deployment)
    return Calibration(config_of(deployment), protocol.dim, protocol.n_users, len(deployment.names("local_server")))


def peers(deployment: Deployment[FCLUBProtocol], name: str) -> list[str] | None:
    """The parties ``name`` links with: a local server only with the users and the global server."""
    if deployment.parties[name].role == "local_server":
        return [deployment.names("users")[0], FCLUBProtocol.GLOBAL]
    return None


def prepare(deployment: Deployment[FCLUBProtocol], name: str) -> None:
    """Before the party links up: a few rounds of its algorithm in memory, so that the compiled kernels are loaded
    (about a second per process) before the session's clock starts rather than at its first rounds."""
    import dataclasses

    from privbandits.protocols.fclub.driver import FederatedClusteredBandit

    config, env = dataclasses.replace(config_of(deployment), horizon=15), environment_of(deployment)
    env.reset(np.random.default_rng(0))
    bandit = FederatedClusteredBandit(config, _server_of_user(deployment), env.dim, env.n_arms,
                                      rng=np.random.default_rng(0))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        play(bandit, env, config.horizon)


def receive_deadline(deployment: Deployment[FCLUBProtocol], name: str) -> float:
    """Seconds party ``name`` waits for a message before it counts its peer as lost.

    The global server waits ``deadline_s`` (for a local server's phase uploads or its
    :class:`Applied`), a local server twice that (for the global server, which may be waiting on
    another local server), the users three times (for a local server waiting on the global server):
    so a stalled local server is named by the global server, which goes on without it.
    """
    factor = {"global_server": 1.0, "local_server": 2.0}.get(deployment.parties[name].role, 3.0)
    return factor * deployment.deadline_s


IDLE = 4.0
"""The global server and the local servers wait this many ``deadline_s`` for whatever comes next (longer than the
users wait for a local server), so a local server that stalls mid-round is named by the users, who go on without
it, rather than ending the session; nothing at all within it means the users, who keep the clock, are lost."""


def _next(party, wanted: tuple[str, ...], deployment: Deployment[FCLUBProtocol]) -> tuple[str, str]:
    """``party.peek(wanted)`` from any peer, waiting :data:`IDLE` deadlines; the users are named if nothing comes."""
    with party.network.patience(IDLE * deployment.deadline_s):
        try:
            return party.peek(wanted)
        except PeerLost as exc:
            if exc.peer != "any":
                raise
            users = deployment.names("users")[0]
            raise PeerLost(
                f"lost peer {users!r} in {exc.round}: no message from any peer within "
                f"{IDLE * deployment.deadline_s:g} s (the users keep the clock)",
                peer=users,
                round=exc.round,
            ) from None


@entropy.recorded
def run_party(
    deployment: Deployment[FCLUBProtocol],
    name: str,
    network: TlsNetwork,
    *,
    resume: bool = False,
    on_round: Callable[[int, int], None] | None = None,
) -> dict:
    """Play party ``name``'s part of the session on ``network`` (already connected); ``resume``: go on from the
    parties' checkpoints (:mod:`privbandits.deploy.fclub.resume`)."""
    from privbandits.deploy.fclub.global_server import run_global
    from privbandits.deploy.fclub.local_server import run_local_server
    from privbandits.deploy.fclub.users import run_users

    role = deployment.parties[name].role
    with warnings.catch_warnings():
        if _protocol(deployment).preset == "reference":  # as the experiments' runs
            warnings.filterwarnings("ignore", message=NOISE_WARNING)
        if role == "users":
            return run_users(deployment, name, network, on_round, resume)
        if role == "global_server":
            return run_global(deployment, name, network, resume)
        return run_local_server(deployment, name, network, resume)


def free_running(deployment: Deployment[FCLUBProtocol]) -> bool:
    """Whether the file's ``protocol.schedule`` is ``free-running``."""
    return _protocol(deployment).schedule == "free-running"


def _check_sender(name: str, sender: str, kind: str, expected: str) -> None:
    if sender != expected:
        raise ProtocolError(f"{name!r} takes {kind!r} messages only from {expected!r}, got one from {sender!r}")


# -- the session's outcome, and the in-memory run it must equal -------------------------------------
def outcome(deployment: Deployment[FCLUBProtocol]) -> dict:
    """The session from the parties' result files: per-round cumulative regret (unserved rounds add
    nothing) and communication (the paper's count, dated by the local servers' logs and the global
    server's downloads per upload), the communication totals, and the local servers' composed ledger."""
    import json

    from privbandits.privacy.ledger import PrivacyLedger

    results = {}
    for name in deployment.parties:
        path = deployment.result_path(name)
        if path.is_file():
            results[name] = json.loads(path.read_text())
    horizon = _protocol(deployment).horizon
    users = results[deployment.names("users")[0]]
    glob = results[FCLUBProtocol.GLOBAL]
    regret = np.cumsum([0.0 if r is None else r for r in users["regret"]])
    added = np.zeros(horizon + 1, dtype=np.int64)
    counts = Communication(synchronous=config_of(deployment).synchronous, rounds=users["served"])
    ledger = PrivacyLedger()
    for name in deployment.names("local_server"):
        if name not in results:
            continue  # lost: it wrote no result
        local = results[name]
        for t, sent, renewals in local["phases"]:
            added[t] += sent + renewals
        for t, delivered in zip(local["upload_rounds"], glob["downloads_per_upload"][name], strict=True):
            added[t] += 1 + delivered
        for key in ("phase_uploads", "renewals", "uploads", "downloads", "shared_updates"):
            setattr(counts, key, getattr(counts, key) + local["counts"][key])
        ledger.record_rows(local["ledger"])
    counts.changed_phases = glob["counts"]["changed_phases"]
    counts.idle_downloads = glob["counts"]["idle_downloads"]
    return {
        "regret": regret,
        "communication": np.cumsum(added[1:]),
        "counts": counts,
        "ledger": ledger,
        "results": results,
    }


def run_in_memory(deployment: Deployment[FCLUBProtocol], network: Network | None = None):
    """The run of the deployment's algorithm, setting, horizon and seed in one process, as the experiments
    run it (:func:`~privbandits.protocols.fclub.run_fclub`; on ``network``, default a fresh in-memory one): a
    :class:`~privbandits.protocols.fclub.FCLUBOutcome`. With OS randomness (not reproducible) the local
    servers' generators come from fresh OS entropy, as the processes' do; the environment is the same."""
    from privbandits.protocols.fclub.driver import FederatedClusteredBandit

    config, env = config_of(deployment), environment_of(deployment)
    environment, protocol = _seeds(deployment)
    env.reset(np.random.default_rng(environment))
    rng = entropy.generator(deployment, None, protocol)
    with warnings.catch_warnings():
        if _protocol(deployment).preset == "reference":
            warnings.filterwarnings("ignore", message=NOISE_WARNING)
        bandit = FederatedClusteredBandit(
            config, _server_of_user(deployment), env.dim, env.n_arms, rng=rng, network=network
        )
        return play(bandit, env, config.horizon)


def upload_digest(uploads) -> str:
    """A SHA-256 chain over ``(sender, message)`` phase uploads and uploads, in order (what the global server received;
    a chain, so that a checkpoint can carry it on)."""
    digest = ""
    for sender, msg in uploads:
        digest = chain_upload(digest, sender, msg)
    return digest


def chain_upload(digest: str, sender: str | None, msg: PhaseUpload | Upload) -> str:
    """The chain ``digest`` (hex) extended by one phase upload or upload."""
    step = hashlib.sha256(f"{digest}|{msg.kind}|{sender}|{msg.cluster}|{msg.count}|".encode())
    step.update(np.ascontiguousarray(msg.gram).tobytes())
    step.update(np.ascontiguousarray(msg.moment).tobytes())
    return step.hexdigest()


DEPLOYABLE = PartyFunctions(
    FCLUBProtocol, (__name__,), run_party, receive_deadline, in_memory=run_in_memory, linked_peers=peers,
    before_linking=prepare, no_data_files="every party derives the synthetic users from the seed",
)  # fmt: skip
"""FCLUB's party code (the registry loads it through its package's ``PARTY_CODE``)."""
