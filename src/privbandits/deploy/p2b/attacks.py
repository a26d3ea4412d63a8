"""An attack on a P2B deployment by its own server, from what it holds: the file and the batch it received.

Issue 28 measured it on deployments whose every party derived its randomness from the deployment file's ``seed``; it
is what ``reproducible = true`` still allows (by design: it is for tests and demos), and what the default, OS entropy
at each party (:mod:`privbandits.deploy.entropy`), defeats. ``tests/deploy/test_deploy_attacks.py`` asserts both.

:func:`p2b_server_attack`: the P2B server, holding the file and the encoded batch it received, recomputes every early
device's participation coin and names the device behind each released report. It replays what the file determines:
the users of ``deploy data`` (``data_seed``) and :func:`~privbandits.protocols.p2b.core.simulate` with the file's
``seed``, then the shuffler's permutation and threshold.

:func:`read_queue`: a reader of the shuffler's durable queue (its SQLite file, during the session or after) lists every
report row it holds and what of each it can read in the clear; with sealed reports only codes and ciphertexts.

:func:`rogue_host_reports`: a device host, holding its own certificate, sends reports as devices the deployment
does not give it (a made-up user, a user of another host's block) and a second, different report of one of its own
devices; the shuffler's admission (:mod:`~privbandits.deploy.p2b.admission`) refuses each and counts it
(``tests/deploy/p2b/test_p2b_admission.py``).

The attacks live with the deployments, not in :mod:`privbandits.privacy`, because they read deployment files (the
privacy package sits below the protocols and the deployments).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from privbandits.comm import InMemoryNetwork
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.p2b.data import synthetic_population
from privbandits.deploy.p2b.section import P2BProtocol
from privbandits.deploy.p2b.session import config_of, encoder_of
from privbandits.protocols.p2b.core import EncodedReport, simulate

N_STREAMS = 9
ENCODED_SHUFFLER, ENCODED_REPORTS = 5, 7
"""The streams of :func:`~privbandits.protocols.p2b.core.simulate` (spawned from its seed) of the shuffler's encoded
batch and of the devices' encoded reports."""


@dataclass(frozen=True)
class P2BAttack:
    """What the P2B server inferred."""

    participates: np.ndarray
    """(n_early,) bool: each early device's participation coin of the encoded batch, as predicted."""
    senders: np.ndarray
    """(released,) int: the early user named as the sender of each released report (-1: none)."""


def _seeded(seed: int, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed).spawn(N_STREAMS)[stream])


def p2b_server_attack(deployment: Deployment[P2BProtocol], codes: np.ndarray) -> P2BAttack:
    """The P2B server's attack from the deployment file and the encoded batch's ``codes`` (in the order received).

    Participation: the first draw of the devices' report stream is each early user's coin
    (:func:`~privbandits.protocols.p2b.core.choose_reports`). Attribution: a replay of the session from the
    file gives the devices' reports in canonical order (users ascending); the shuffler's stream
    permutes them and its threshold drops rare codes, so the replay's k-th released report is
    attributed to the k-th row received.
    """

    protocol = deployment.protocol
    n_early = int(protocol.early_fraction * protocol.n_users)
    participates = _seeded(protocol.seed, ENCODED_REPORTS).random(n_early) < protocol.participation
    network = InMemoryNetwork(record=True)  # the file's users (``data_seed``) and seed, replayed
    simulate(synthetic_population(protocol), encoder_of(protocol), config_of(protocol), protocol.seed, network=network)
    reports = [(e.sender, e.message.code) for e in network.transcript if isinstance(e.message, EncodedReport)]
    users = np.array([int(sender.removeprefix("device")) for sender, _ in reports], dtype=np.int64)
    replayed = np.array([code for _, code in reports], dtype=np.int64)
    order = _seeded(protocol.seed, ENCODED_SHUFFLER).permutation(len(reports))
    users, replayed = users[order], replayed[order]
    values, counts = np.unique(replayed, return_counts=True)
    kept = users[~np.isin(replayed, values[counts < protocol.threshold])]
    senders = np.full(len(codes), -1, dtype=np.int64)
    shared = min(len(codes), len(kept))
    senders[:shared] = kept[:shared]
    return P2BAttack(participates, senders)


@dataclass(frozen=True)
class QueueRead:
    """What a reader of the shuffler's queue file found."""

    codes: list[int]
    """Each report row's code (the crowd id the shuffler thresholds on)."""
    clear: list[tuple[int, int, int]]
    """The rows whose ``(code, action, reward)`` it read in the clear."""
    sealed: list[bytes]
    """The rows' sealed contents (opaque without the server's key)."""


def read_queue(path: Path) -> QueueRead:
    """Read every report row of the shuffler's SQLite queue at ``path`` (read-only, while the shuffler writes)."""
    import sqlite3

    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0) as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(reports)")}
        sealed = "sealed" if "sealed" in columns else "NULL"
        rows = db.execute(f"SELECT code, action, reward, {sealed} FROM reports").fetchall()
    return QueueRead([row[0] for row in rows], [tuple(row[:3]) for row in rows if None not in row[:3]],
                     [bytes(row[3]) for row in rows if row[3] is not None])  # fmt: skip


def rogue_host_reports(deployment: Deployment[P2BProtocol], host: str, phase: str, again: tuple[int, EncodedReport],
                       commit: str, *, invented: int = 10**9) -> dict[str, bool]:  # fmt: skip
    """Device host ``host`` (``deployment``: the file with the shuffler's actual address, and ``host``'s bundle) sends
    the shuffler one sealed report each in ``phase`` as an invented device (user ``invented``), as the first user of
    another host's block, and as its own user ``again[0]`` with ``again[1]``'s code (a second report of that device):
    whether each was taken (acknowledged), by kind. Each carries ``commit``, the host's commitment to its coins."""
    from privbandits.comm.oneshot import send_own
    from privbandits.deploy.p2b.data import layout
    from privbandits.deploy.p2b.messages import SealedReport
    from privbandits.deploy.p2b.sealing import SEALED_BYTES
    from privbandits.deploy.p2b.served_wire import party_network

    shuffler = deployment.names("shuffler")[0]
    other = next(block for name, block in layout(deployment).items() if name != host).early.start
    made_up = np.random.default_rng().integers(0, 256, SEALED_BYTES, dtype=np.uint8)  # sealed to no one: refused first
    user, report = again
    sends = {"invented": (invented, SealedReport(0, made_up, commit)),
             "foreign": (other, SealedReport(0, made_up, commit)),
             "duplicate": (user, SealedReport(report.code, made_up, commit))}  # fmt: skip
    network = party_network(deployment, host, listen=False)
    try:
        with network.phase(phase):
            return {kind: send_own(network, f"{host}-device{user}", shuffler, report, resume=False)
                    for kind, (user, report) in sends.items()}  # fmt: skip
    finally:
        network.close_sockets()
