"""P2B with a shuffler, a server and two device hosts, each in its own OS process over mutual TLS on 127.0.0.1.

The processes' released batches, published models and late users' rewards must equal the
in-memory ``simulate`` run with the same data and seed; the server must never receive a
message from a device host (transcript check).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from privbandits.comm import TlsCredentials
from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import DeploymentError, load_deployment
from privbandits.deploy.p2b import SETTINGS, layout, load_host, outcome, run_in_memory
from privbandits.protocols.p2b import EncodedBatch, ModelRelease, RawBatch

EXAMPLE = Path(__file__).resolve().parents[1] / "configs" / "deploy" / "p2b.toml"


def local_copy(folder: Path, **replace: str) -> Path:
    """The shipped example with ephemeral ports (and ``replace``d settings), in ``folder``."""
    text = re.sub(r'address = "127\.0\.0\.1:\d+"', 'address = "127.0.0.1:0"', EXAMPLE.read_text())
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    path = folder / "p2b.toml"
    path.write_text(text)
    return path


@pytest.fixture
def encoder_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVBANDITS_CACHE", str(tmp_path / "cache"))  # the party processes inherit it


def test_the_shipped_example_runs_as_processes_and_equals_the_in_memory_run(tmp_path, encoder_cache):
    path = local_copy(tmp_path)
    runner = CliRunner()
    for command in (["deploy", "certs", str(path)], ["deploy", "data", str(path)]):
        result = runner.invoke(standalone, command)
        assert result.exit_code == 0, result.output
    result = runner.invoke(standalone, ["deploy", "local", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "p2b-two-device-hosts: parties" in result.output and "results:" in result.output
    # a summary: each host's devices in one row per phase, not a row per device (2,122 lines before)
    assert len(result.output.splitlines()) < 80 and "hosta-device" not in result.output
    spec = load_deployment(path)
    hosts = spec.names("device_host")
    assert len(hosts) == 2 and spec.protocol.n_users >= 2000

    # each device host holds only its own users (the server and the shuffler hold no data file)
    blocks = layout(spec)
    assert [spec.parties[name].data for name in ("shuffler", "server")] == [None, None]
    for name in hosts:
        data = load_host(spec, name)
        assert data.early.n_users == len(blocks[name].early) and data.late.n_users == len(blocks[name].late)
    assert sum(len(blocks[name].early) + len(blocks[name].late) for name in hosts) == spec.protocol.n_users

    got = outcome(spec)
    reference, network = run_in_memory(spec)
    # the late users' rewards, setting by setting
    for setting in SETTINGS:
        expected = getattr(reference, setting)
        assert got["late"][setting] == {
            "mean": expected.mean, "std": expected.std, "n_users": expected.n_users, "rounds": expected.rounds
        }  # fmt: skip
    # the released batches, in the same (shuffled) order
    sent = {envelope.message.kind: envelope.message for envelope in network.transcript}
    encoded, raw = sent[EncodedBatch.kind], sent[RawBatch.kind]
    batches = got["batches"]
    for field in ("codes", "actions", "rewards"):
        assert np.array_equal(np.asarray(batches["encoded"][field]), getattr(encoded, field)), field
    for field in ("contexts", "actions", "rewards"):
        assert np.array_equal(np.asarray(batches["raw"][field]), getattr(raw, field)), field
    assert len(encoded.codes) > 0 and np.unique(encoded.codes, return_counts=True)[1].min() >= spec.protocol.threshold
    # the published models (non-private, then private)
    models = [envelope.message for envelope in network.transcript if envelope.message.kind == ModelRelease.kind]
    for model, key in zip(models, ("non_private", "private"), strict=True):
        first, second = got["models"][key]
        assert np.array_equal(np.asarray(first), model.first) and np.array_equal(np.asarray(second), model.second)
    # the parties' ledgers compose to the in-memory protocol's ledger
    assert [(e.mechanism, e.epsilon, e.details) for e in got["ledger"].entries] == [
        (e.mechanism, e.epsilon, e.details) for e in reference.ledger.entries
    ]
    assert sum(got["results"][h]["encoded_reports_sent"] for h in hosts) == reference.encoded_tuples_shared
    assert sum(got["results"][h]["raw_reports_sent"] for h in hosts) == reference.raw_tuples_shared

    # transcripts: the server receives batches only from the shuffler; from a device host only its fetch of each
    # published model (a version number: 8 bytes), and nothing from any device
    results = got["results"]
    server_heard = {(phase, sender, messages, size) for phase, sender, _, messages, size, _ in
                    results["server"]["received"]}  # fmt: skip
    fetches = {(phase, host, 1, 8) for phase in ("share_raw", "share_encoded") for host in hosts}
    assert {row for row in server_heard if row[1] != "shuffler"} == fetches
    assert {(phase, sender) for phase, sender, *_ in server_heard if sender == "shuffler"} == {
        ("share_raw", "shuffler"), ("share_encoded", "shuffler")
    }  # fmt: skip
    for name in hosts:
        assert {receiver for _, _, receiver, *_ in results[name]["traffic"]} == {"shuffler", "server"}
        heard = {(sender, messages, size) for _, sender, _, messages, size, _ in results[name]["received"]
                 if sender == "shuffler"}  # fmt: skip
        assert heard == {("shuffler", 1, 0)}  # from the shuffler only the opening of each batch (no payload)
        assert {sender for _, sender, *_ in results[name]["received"]} == {"server", "shuffler"}
    # each device's report came on a connection of its own: the shuffler heard each device once per batch, by
    # its own name (its host's certificate vouching for it), and the server never heard any device
    shuffler_heard = [row for row in results["shuffler"]["received"] if row[0] in ("share_raw", "share_encoded")]
    devices = [(phase, sender) for phase, sender, _, messages, *_ in shuffler_heard if "-device" in sender]
    assert len(devices) == len(set(devices)) == reference.raw_tuples_shared + reference.encoded_tuples_shared
    assert {sender.split("-device")[0] for _, sender in devices} == set(hosts)
    assert all(messages == 1 for _, sender, _, messages, *_ in shuffler_heard if "-device" in sender)
    # the devices' report bytes to the shuffler are the in-memory ones (plus one CloseBatch per host)
    for phase in ("share_raw", "share_encoded"):
        to_shuffler = [row for h in hosts for row in results[h]["traffic"] if row[0] == phase and row[2] == "shuffler"]
        processes = sum(row[4] for row in to_shuffler)
        in_memory = network.traffic.total(phase, receiver=reference_shuffler(phase)).bytes
        assert processes == in_memory
        to_server = sum(row[4] for row in results["shuffler"]["traffic"] if row[0] == phase)
        assert to_server == network.traffic.total(phase, receiver="server").bytes
    assert all(result["refusals"] == [] and result["dropped"] == [] for result in results.values())

    # the encoded reports went through the shuffler's durable queue: one batch, released, no identity kept
    from privbandits.deploy.p2b import queue_path
    from privbandits.protocols.p2b_queue import ReportQueue

    assert results["shuffler"]["queue"]["batches"] == [0]
    path = queue_path(spec, "shuffler")
    queue = ReportQueue(path)
    try:
        assert queue.batches() == [0] and queue.released(0) and queue.unreleased() == []
        assert queue.held() == 0 and queue.held_senders() == []
        assert len(queue.batch(0)) == reference.release["received"]
    finally:
        queue.close()
    stored = b"".join(f.read_bytes() for f in path.parent.iterdir() if f.name.startswith(path.name))
    assert not any(name.encode() in stored for name in hosts)


def reference_shuffler(phase: str) -> str:
    return "raw_shuffler" if phase == "share_raw" else "shuffler"


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (lambda t: t.replace('role = "server"', 'role = "server"\ndata = "data/server.npz"'),
         "parties.server.data: the server holds no private data"),
        (lambda t: t.replace('role = "shuffler"', 'role = "device_host"'),
         "exactly one party must have role 'shuffler'"),
        (lambda t: t.replace('data = "data/hostb.npz"\n', ""), "parties.hostb.data: the device_host party needs"),
        (lambda t: t.replace("early_fraction = 0.7", "early_fraction = 0.9999"),
         "every host needs at least one early and one late"),
        (lambda t: t.replace("early_fraction = 0.7", "early_fraction = 0.0001"), "both the early and the late users"),
        (lambda t: t.replace("participation = 0.5", "participation = 1.5"), "protocol.participation"),
    ],
)  # fmt: skip
def test_a_bad_p2b_deployment_file_names_the_field(tmp_path, edit, error):
    path = local_copy(tmp_path)
    path.write_text(edit(path.read_text()))
    with pytest.raises(DeploymentError, match=error):
        load_deployment(path)


def test_a_device_host_file_of_the_wrong_shape_is_named(tmp_path):
    spec = load_deployment(local_copy(tmp_path))
    path = spec.parties["hosta"].data
    path.parent.mkdir(parents=True)
    users = len(layout(spec)["hosta"].early)
    np.savez(path, early_contexts=np.zeros((users, 10, 4)), early_rewards=np.zeros((users, 10, 5), dtype=np.int8),
             late_contexts=np.zeros((1, 10, 5)), late_rewards=np.zeros((1, 10, 5), dtype=np.int8))  # fmt: skip
    with pytest.raises(DeploymentError, match=r"early_contexts must have shape \(1050, 10, 5\)"):
        load_host(spec, "hosta")


def test_a_shuffler_queue_left_with_held_reports_is_not_reused_by_a_fresh_session(tmp_path):
    from privbandits.deploy.p2b import open_queue, queue_path
    from privbandits.protocols.p2b_queue import ReportQueue

    spec = load_deployment(local_copy(tmp_path))
    queue = open_queue(spec, "shuffler")  # a fresh queue opens
    queue.accept("0" * 32, "hosta", 3, 1, 1)
    queue.close()
    with pytest.raises(DeploymentError, match=r"holds 1 report\(s\) .* of an interrupted session"):
        open_queue(spec, "shuffler")
    queue = ReportQueue(queue_path(spec, "shuffler"))
    queue.close_batch(0)
    queue.mark_released(0)
    queue.close()
    open_queue(spec, "shuffler").close()  # every batch released: the next session numbers on


def _held_reports(path: Path) -> int:
    """Reports accepted by the shuffler's queue and not yet batched (read-only, while the shuffler writes)."""
    import sqlite3

    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0) as db:
            return db.execute("SELECT COUNT(*) FROM reports WHERE batch_id IS NULL").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is not written yet
        return 0


@pytest.mark.parametrize("victim", ["shuffler", "server"])
def test_a_party_killed_mid_batch_loses_no_accepted_report_and_releases_no_batch_twice(tmp_path, encoder_cache, victim):
    """SIGKILL the shuffler (or the server) while the shuffler accepts the encoded batch: every other party stops
    naming it; restarted with --resume, the hosts replay their reports, the queue keeps each once (ids keyed by host
    and index), the server serves the model it had published from its checkpoint, and the session ends as the
    uninterrupted one."""
    import os
    import signal
    import tempfile
    import time

    from privbandits.deploy.local import start_parties, wait_parties
    from privbandits.deploy.p2b import queue_path
    from privbandits.deploy.party import EXIT_LOST
    from privbandits.protocols.p2b_queue import ReportQueue

    deadline = 5.0
    path = local_copy(tmp_path, **{"deadline_s = 30": f"deadline_s = {deadline}"})
    runner = CliRunner()
    for command in (["deploy", "certs", str(path)], ["deploy", "data", str(path)]):
        assert runner.invoke(standalone, command).exit_code == 0
    spec = load_deployment(path)
    queue_file = queue_path(spec, "shuffler")
    parties = start_parties(spec, tmp_path)
    try:
        by_name = {party.name: party for party in parties}
        start = time.monotonic()
        while _held_reports(queue_file) < 20 and time.monotonic() - start < 60:
            assert by_name["shuffler"].process.poll() is None, "the shuffler ended before its batch"
            time.sleep(0.005)
        os.kill(by_name[victim].process.pid, signal.SIGKILL)
        killed = time.monotonic()
        codes = wait_parties(parties, deadline)
        elapsed = time.monotonic() - killed
    finally:
        for party in parties:
            if party.process.poll() is None:
                party.process.kill()
    # counted by opening the queue as the restarted shuffler will: a commit whose write-ahead-log frame was
    # synced just before the kill, but not yet indexed, is recovered there (a read-only reader can miss it)
    queue = ReportQueue(queue_file)
    accepted = queue.held() + sum(len(queue.batch(b)) for b in queue.unreleased())  # a server killed: batch formed
    queue.close()
    assert 20 <= accepted
    assert codes[victim] == -signal.SIGKILL
    assert elapsed < 3 * deadline + 5.0  # the loss is seen at once (connections refused or ended), not at a deadline
    for name in {"shuffler", "server", "hosta", "hostb"} - {victim}:
        assert codes[name] == EXIT_LOST, (name, by_name[name].stderr)
        assert by_name[name].last_error.startswith(f"party {name!r}: lost peer {victim!r} in "), by_name[
            name
        ].last_error
    assert not any(spec.result_path(name).exists() for name in spec.parties)

    with tempfile.TemporaryDirectory() as workdir:
        parties = start_parties(spec, Path(workdir), resume=True)
        codes = wait_parties(parties, deadline)
    assert all(code == 0 for code in codes.values()), {p.name: p.stderr for p in parties}
    got, (reference, _) = outcome(spec), run_in_memory(spec)
    results = got["results"]
    assert results["server"]["resumed_after"] == 1  # the raw baseline's model was out; the private one not
    for setting in SETTINGS:
        assert got["late"][setting]["mean"] == getattr(reference, setting).mean
    encoded = reference.release
    assert len(got["batches"]["encoded"]["codes"]) == encoded["released"]
    assert [(e.mechanism, e.epsilon, e.details) for e in got["ledger"].entries] == [
        (e.mechanism, e.epsilon, e.details) for e in reference.ledger.entries
    ]
    # no accepted report lost, none counted twice: one batch of every report, released once; the server
    # received one encoded batch in the resumed session (and none in the killed one: it had no model to save)
    assert results["shuffler"]["queue"]["duplicates"] == accepted
    queue = ReportQueue(queue_file)
    try:
        assert queue.batches() == [0] and queue.unreleased() == [] and queue.held() == 0
        assert len(queue.batch(0)) == encoded["received"]
    finally:
        queue.close()
    server_heard = [row for row in results["server"]["received"] if row[1] == "shuffler"]
    assert [(row[0], row[3]) for row in server_heard] == [("share_encoded", 1)]


def test_a_device_that_disconnects_mid_report_loses_only_its_own_report(tmp_path, encoder_cache):
    """While the shuffler takes hosta's encoded reports, two more "devices of hosta" connect (hosta's certificate):
    one ends its connection half-way through its report's frame, one before sending anything. The shuffler drops
    both connections, naming why, and goes on: every other report is kept and the session equals the in-memory
    run (which never had those two reports)."""
    import socket

    from privbandits.comm import frames
    from privbandits.comm.frames import FrameType
    from privbandits.comm.tls import client_context
    from privbandits.deploy.local import start_parties, wait_parties
    from privbandits.deploy.p2b import queue_path

    path = local_copy(tmp_path, **{"deadline_s = 30": "deadline_s = 10"})
    runner = CliRunner()
    for command in (["deploy", "certs", str(path)], ["deploy", "data", str(path)]):
        assert runner.invoke(standalone, command).exit_code == 0
    spec = load_deployment(path)
    parties = start_parties(spec, tmp_path)
    try:
        start = time.monotonic()
        while _held_reports(queue_path(spec, "shuffler")) < 5 and time.monotonic() - start < 60:
            time.sleep(0.005)
        resolved = load_deployment(tmp_path / "deployment.resolved.toml")
        host, port = resolved.parties["shuffler"].host_port
        hosta = spec.parties["hosta"]
        context = client_context(TlsCredentials(hosta.ca, hosta.certificate, hosta.key))
        for cut in (True, False):
            raw = socket.create_connection((host, port), timeout=10)
            sock = context.wrap_socket(raw, server_hostname=None)
            if cut:  # a header announcing 100 bytes, then 10 of them, then gone
                sock.sendall(frames.pack_header(FrameType.DATA, 0, 1, 100) + b"x" * 10)
            sock.close()
        codes = wait_parties(parties, spec.deadline_s)
    finally:
        for party in parties:
            if party.process.poll() is None:
                party.process.kill()
    assert codes == dict.fromkeys(codes, 0), {p.name: p.stderr for p in parties}
    got, (reference, _) = outcome(spec), run_in_memory(spec)
    dropped = got["results"]["shuffler"]["dropped"]
    assert len(dropped) == 2 and all("'hosta'" in reason for reason in dropped), dropped  # why: test_transport_oneshot
    assert len(got["batches"]["encoded"]["codes"]) == reference.release["released"]
    for setting in SETTINGS:
        assert got["late"][setting]["mean"] == getattr(reference, setting).mean


@pytest.mark.parametrize(
    ("setting", "check"),
    [
        ("batch_size = 100", lambda received, refused, total: received == 100 and refused == total - 100),
        ("batch_window_s = 0.05", lambda received, refused, total: received < total and received + refused == total),
    ],
)
def test_the_shuffler_closes_a_batch_by_size_or_time_and_refuses_later_reports(tmp_path, encoder_cache, setting, check):
    """A batch closes once it holds ``batch_size`` reports or ``batch_window_s`` after it opened: the devices that
    come later are refused (their reports lost, the devices and the session go on), and every party's count agrees
    (the ledgers compose)."""
    path = local_copy(tmp_path, **{'tie_break = "random"': f'tie_break = "random"\n{setting}'})
    runner = CliRunner()
    for command in (["deploy", "certs", str(path)], ["deploy", "data", str(path)],
                    ["deploy", "local", str(path), "--no-progress"]):  # fmt: skip
        result = runner.invoke(standalone, command)
        assert result.exit_code == 0, result.output
    spec = load_deployment(path)
    got, (reference, _) = outcome(spec), run_in_memory(spec)  # outcome composes the ledgers: counts agree
    results, hosts = got["results"], spec.names("device_host")
    shuffler = results["shuffler"]
    for phase, total, sent_key in (("raw", reference.raw_tuples_shared, "raw_reports_sent"),
                                   ("encoded", reference.encoded_tuples_shared, "encoded_reports_sent")):  # fmt: skip
        received, refused = shuffler["release"][phase]["received"], shuffler["refused"][phase]
        assert check(received, refused, total), (phase, received, refused, total)
        assert sum(results[h][sent_key] for h in hosts) == received
    assert sum(results[h]["reports_refused"] for h in hosts) == sum(shuffler["refused"].values())
    assert shuffler["dropped"] == []


def test_the_server_refuses_a_fetch_of_a_model_version_it_has_not_published():
    from privbandits.comm import InMemoryNetwork, Party, ProtocolError
    from privbandits.deploy.p2b import SHARE_RAW, FetchModel, _parties

    _, _, PublishingServer = _parties()
    network = InMemoryNetwork(serialize=True)
    server = PublishingServer("server", network, 3, participation=0.5, shuffler="shuffler", hosts=["hosta"])
    host = Party("hosta", network)
    server.releases.append((np.zeros(3), np.zeros(3)))
    with network.phase(SHARE_RAW):
        host.send("server", FetchModel(2))
        with pytest.raises(ProtocolError, match="'hosta' fetched model version 2; version 1 is published"):
            server.serve(1)
