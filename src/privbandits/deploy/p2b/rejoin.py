"""What lets one P2B party be restarted (``--resume``) while the others keep running
(:mod:`privbandits.deploy.p2b.party`).

The parties' links come back by themselves (:class:`~privbandits.comm.tls.rejoin.RejoinNetwork`: each side
sends its journal of messages again, each skips what it has already received), and a restarted party replays its
part from the start: the same coins (its kept seed), the same messages. What the party links do not carry is
handled here:

* the devices' reports (each on a connection of its own): a device whose report was not acknowledged sends it
  again (:func:`send_report`), and a restarted host's devices send theirs again. The shuffler keeps each report
  once: a device's report id is a keyed hash of its name (:func:`report_id`), so its queue recognises one it
  already holds, and a report for a batch whose host has already closed it is acknowledged and not taken again
  (:func:`stray_handler`);
* the shuffler's batches: each released batch is saved in its checkpoint (:func:`save_shuffler`) before the next
  phase, so a restarted shuffler sends that batch again (the server skips it if it has it) instead of
  collecting reports it no longer holds. The raw baseline's reports are not queued: a shuffler killed while it
  collects the raw batch loses the raw reports it had acknowledged (the run then differs from the in-memory one).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import numpy as np

from privbandits.comm import Message, PeerLost
from privbandits.deploy import checkpoint
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.p2b.section import P2BProtocol
from privbandits.deploy.p2b.session import BATCH_FIELDS


def rejoin(deployment: Deployment[P2BProtocol]) -> tuple[float, float]:
    """``(rejoin_s, backoff_s)`` of the parties' networks (:class:`~privbandits.comm.tls.rejoin.RejoinNetwork`)."""
    return deployment.protocol.rejoin_s, deployment.protocol.rejoin_backoff_s


def report_id(key: bytes, device: str) -> str:
    """The queue id of device ``device``'s encoded report of this session: the same when the device sends it again
    (so the queue keeps it once); keyed with the shuffler's private key, so the queue file does not name it."""
    return hashlib.blake2b(device.encode(), key=key, digest_size=16).hexdigest()


def canonical_order(key: bytes, deployment: Deployment[P2BProtocol]) -> dict[str, int]:
    """Each possible report id's user: a batch's reports sorted by it are in the canonical order (host by host in
    deployment order, users ascending), even those a restarted shuffler's queue held from before."""
    from privbandits.deploy.p2b.data import layout

    return {report_id(key, f"{host}-device{user}"): user for host, block in layout(deployment).items()
            for user in block.early}  # fmt: skip


def send_report(host, user: int, receiver: str, report: Message, rejoin_s: float) -> bool:
    """Device ``user`` of ``host`` sends ``report`` on a connection of its own: True once acknowledged, False if
    refused. Unacknowledged (the shuffler went away), it tries again for up to ``rejoin_s`` seconds, after the host
    has linked with the shuffler again (so a restarted shuffler is not left waiting for it)."""
    from privbandits.comm.oneshot import send_own

    network, stop = host.network, None
    while True:
        network.check_links()  # a party link that ended is rejoined first
        try:
            return send_own(network, f"{host.prefix}{user}", receiver, report)
        except PeerLost:
            stop = time.monotonic() + rejoin_s if stop is None else stop
            if time.monotonic() >= stop:
                raise


def stray_handler(shuffler, network):
    """The shuffler's handler of a device connection that arrives while it waits for something else: a report
    for a batch its host has already closed (a restarted host replays) is acknowledged and not taken again."""
    from privbandits.comm.codec import MessageDecodeError, decode
    from privbandits.comm.frames import FrameType

    def on_stray(arrival) -> bool:
        host = arrival.link.peer
        try:
            envelope = decode(arrival.frame.payload)
        except MessageDecodeError as exc:
            network.note_dropped(f"a device of {host!r} sent a bad frame: {exc}")
            arrival.link.shut()
            return True
        if envelope.phase not in shuffler.closed.get(host, ()) or not envelope.sender.startswith(f"{host}-"):
            return False
        try:
            arrival.link.set_timeout(network.handshake_timeout)
            arrival.link.send(FrameType.CLOSE, 0, b"")
        except OSError:
            pass
        arrival.link.shut()
        shuffler.replayed += 1
        return True

    return on_stray


def save_shuffler(deployment: Deployment[P2BProtocol], name: str, key: bytes, batch_id: int, releases: dict,
                  commits: dict[str, str] | None = None) -> None:  # fmt: skip
    """The shuffler's checkpoint: its report-id key, its session's batch id, each batch released so far
    (``releases``: kind -> (batch message, release details, ledger rows, reports refused)) and the device hosts'
    ``commits`` to their coins (:mod:`~privbandits.deploy.p2b.admission`); written atomically."""
    arrays = {"key": np.frombuffer(key, dtype=np.uint8)}
    meta: dict[str, Any] = {"batch_id": batch_id, "digest": deployment.protocol_digest(), "releases": {},
                            "commits": dict(commits or {})}  # fmt: skip
    for kind, (batch, details, rows, refused) in releases.items():
        arrays |= {f"{kind}.{field}": getattr(batch, field) for field in BATCH_FIELDS[kind]}
        meta["releases"][kind] = {"details": details, "ledger": rows, "refused": refused}
    checkpoint.save(deployment.checkpoint_path(name), arrays, meta)


def restore_shuffler(deployment: Deployment[P2BProtocol], name: str) -> tuple[bytes, int, dict]:
    """What :func:`save_shuffler` saved: ``(key, batch_id, releases)``."""
    from privbandits.deploy.p2b.messages import SealedBatch
    from privbandits.protocols.p2b.core import RawBatch

    arrays, meta = checkpoint.resume(deployment, name)
    releases = {}
    for kind, saved in meta.get("releases", {}).items():
        fields = (arrays[f"{kind}.{field}"] for field in BATCH_FIELDS[kind])
        batch = (RawBatch if kind == "raw" else SealedBatch)(*fields)
        releases[kind] = (batch, saved["details"], saved["ledger"], saved["refused"])
    return arrays["key"].tobytes(), int(meta["batch_id"]), releases


def restore_commits(deployment: Deployment[P2BProtocol], name: str) -> dict[str, str]:
    """The device hosts' commitments :func:`save_shuffler` saved (none before the hosts sent them)."""
    return dict(checkpoint.resume(deployment, name)[1].get("commits", {}))
