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
(``tests/deploy/test_deploy_attacks.py``): for tests and demos only.

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
and free-running equals lock-step (``tests/deploy/fclub/test_deploy_fclub_free_running.py``).

A lost local server (killed, stalled past the deadline, or failed): the global server names it
(its result's ``lost`` and outcome), drops its link and its clusters from later merges, and
delivers no more messages to it; the users stop sending it users (their rounds are counted as
unserved); the other local servers finish. A lost global server or users party ends the session
for everyone, as in the other deployments. Every party checkpoints its state at each phase start, and a
session ended by a lost party goes on with ``--resume`` (:mod:`privbandits.deploy.fclub.resume`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from privbandits.comm import Network, TlsNetwork
from privbandits.deploy import entropy
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.fclub.global_server import run_global
from privbandits.deploy.fclub.local_server import run_local_server
from privbandits.deploy.fclub.messages import NOISE_WARNING
from privbandits.deploy.fclub.section import FCLUBProtocol
from privbandits.deploy.fclub.session import _protocol, _seeds, _server_of_user, config_of, environment_of
from privbandits.deploy.fclub.users import run_users
from privbandits.deploy.registry import PartyFunctions, deadline_by_role, play_by_role
from privbandits.privacy.ledger import PrivacyLedger
from privbandits.protocols.fclub.accounting import Communication
from privbandits.protocols.fclub.driver import FederatedClusteredBandit
from privbandits.protocols.fclub.rounds import play


def peers(deployment: Deployment[FCLUBProtocol], name: str) -> list[str] | None:
    """The parties ``name`` links with: a local server only with the users and the global server."""
    if deployment.parties[name].role == "local_server":
        return [deployment.names("users")[0], FCLUBProtocol.GLOBAL]
    return None


def prepare(deployment: Deployment[FCLUBProtocol], name: str) -> None:
    """Before the party links up: a few rounds of its algorithm in memory, so that the compiled kernels are loaded
    (about a second per process) before the session's clock starts rather than at its first rounds."""
    import dataclasses

    config, env = dataclasses.replace(config_of(deployment), horizon=15), environment_of(deployment)
    env.reset(np.random.default_rng(0))
    bandit = FederatedClusteredBandit(config, _server_of_user(deployment), env.dim, env.n_arms,
                                      rng=np.random.default_rng(0))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        play(bandit, env, config.horizon)


receive_deadline = deadline_by_role({"global_server": 1.0, "local_server": 2.0}, default=3.0)
"""Seconds a party waits for a message before it counts its peer as lost: the global server waits ``deadline_s``
(for a local server's phase uploads or its :class:`~privbandits.deploy.fclub.messages.Applied`), a local server twice
that (for the global server, which may be waiting on another local server), the users three times (for a local
server waiting on the global server): so a stalled local server is named by the global server, which goes on
without it."""


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
    with warnings.catch_warnings():
        if _protocol(deployment).preset == "reference":  # as the experiments' runs
            warnings.filterwarnings("ignore", message=NOISE_WARNING)
        return _by_role(deployment, name, network, resume=resume, on_round=on_round)


_by_role = play_by_role({"users": run_users, "global_server": run_global, "local_server": run_local_server})


# -- the session's outcome, and the in-memory run it must equal -------------------------------------
def outcome(deployment: Deployment[FCLUBProtocol]) -> dict:
    """The session from the parties' result files: per-round cumulative regret (unserved rounds add
    nothing) and communication (the paper's count, dated by the local servers' logs and the global
    server's downloads per upload), the communication totals, and the local servers' composed ledger."""
    import json

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


DEPLOYABLE = PartyFunctions(
    FCLUBProtocol, (__name__,), run_party, receive_deadline, in_memory=run_in_memory, linked_peers=peers,
    before_linking=prepare, no_data_files="every party derives the synthetic users from the seed",
    serving="privbandits.deploy.fclub.served:serving_role",
)  # fmt: skip
"""FCLUB's party code (the registry loads it through its package's ``PARTY_CODE``)."""
