"""Issue 48's rogue device host, as tests in both directions: the shuffler takes reports only from the devices the
deployment gives each host, once per device and batch, and a host restarted without its state is refused.

Each attack is shown to work on a weakened copy (the shuffler of the issue, which took any name under a host's
prefix) and to fail on the default (:mod:`privbandits.deploy.p2b.admission`).
"""

from __future__ import annotations

import re
import signal
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from p2b_deployment import _held_reports, _wait_all, local_copy
from typer.testing import CliRunner

from privbandits.comm import Envelope
from privbandits.comm.frames import FrameType
from privbandits.deploy import checkpoint
from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.p2b.admission import REASONS, Admission
from privbandits.deploy.p2b.attacks import rogue_host_reports
from privbandits.deploy.p2b.front import Front, _Open
from privbandits.deploy.p2b.messages import SealedReport
from privbandits.deploy.p2b.outcome import outcome, run_in_memory, without_baseline
from privbandits.deploy.p2b.rejoin import report_id
from privbandits.deploy.p2b.sealing import SEALED_BYTES
from privbandits.protocols.p2b.core import EncodedBatch, EncodedReport

SMALL = {"n_users = 3000": "n_users = 500"}


def _spec(tmp_path: Path, *, seeded: bool = True, data: bool = True):
    path = local_copy(tmp_path, raw_baseline=False, seeded=seeded, **SMALL)
    runner = CliRunner()
    for command in (["deploy", "certs", str(path)], *([["deploy", "data", str(path)]] if data else [])):
        assert runner.invoke(standalone, command).exit_code == 0
    return load_deployment(path)


class _AdmitsAll(Admission):
    """The weakened copy: the issue's shuffler, which took any device name under its host's prefix."""

    def check(self, host: str, sender: str, commit: str | None = None) -> str | None:
        return None


@pytest.mark.parametrize("weakened", [True, False])
def test_invented_and_foreign_devices_are_taken_only_by_a_shuffler_without_admission(tmp_path, weakened):
    """The concurrent front end's verdict on a report of hosta's certificate named as a made-up user, as a user of
    hostb's block, as one of hosta's own users, and as another of them under another commitment to hosta's coins (a
    restart's): the weakened copy stores all four, the default only the third, refusing the others with a counted,
    logged line."""
    spec = _spec(tmp_path, data=False)
    admission = (_AdmitsAll if weakened else Admission).of(spec)
    admission.commits = {"hosta": "the start's", "hostb": "hostb's"}
    dropped: list[str] = []
    front = Front(SimpleNamespace(note_dropped=dropped.append, deadline=10.0), spec.names("device_host"), 0)
    shuffler = SimpleNamespace(admission=admission, batch_size=None, batch_window_s=None, collected=0,
                               opened_at=time.monotonic(), refused=[0], first_report_at=None, replaying=False,
                               closed={})  # fmt: skip
    batch = _Open(shuffler, "share_encoded", SealedReport.kind, True)
    hostb_first = 175  # 350 early users over two hosts
    made_up = np.zeros(SEALED_BYTES, np.uint8)
    reports = {user: SealedReport(0, made_up, "the start's") for user in (10**9, hostb_first, 3)}
    reports[4] = SealedReport(0, np.zeros(SEALED_BYTES, np.uint8), "a restart's")
    verdicts = {
        user: front._verdict(batch, "hosta", Envelope(f"hosta-device{user}", "shuffler", "share_encoded", report), 0.0)
        for user, report in reports.items()
    }
    stored = [user for user, verdict in verdicts.items() if verdict == "store"]
    if weakened:
        assert stored == [10**9, hostb_first, 3, 4] and dropped == []
        return
    assert stored == [3]
    assert all(verdicts[user][0] is FrameType.ABORT for user in (10**9, hostb_first, 4))
    assert admission.refused == dict(zip(REASONS, (1, 1, 0, 1), strict=True))
    assert [line.split(":")[0] for line in dropped] == ["refused (invented)", "refused (foreign)",
                                                        "refused (commitment)"]  # fmt: skip
    assert "a user of 'hostb''s block" in dropped[1]


def _first_report(spec, host: str) -> tuple[int, EncodedReport]:
    """``host``'s first device to send an encoded report in the in-memory run, and its report."""
    from privbandits.deploy.p2b.data import layout

    _, network = run_in_memory(spec)
    block = layout(spec)[host].early
    for envelope in network.transcript:
        if isinstance(envelope.message, EncodedReport):
            user = int(envelope.sender.removeprefix("device"))
            if user in block:
                return user, envelope.message
    raise AssertionError(f"{host} sent no encoded report")


def _queued(path: Path, rid: str) -> bool:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0) as db:
            return db.execute("SELECT 1 FROM reports WHERE report_id = ?", (rid,)).fetchone() is not None
    except sqlite3.OperationalError:
        return False


def test_a_rogue_hosts_invented_foreign_and_duplicate_devices_are_refused_and_the_batch_is_the_honest_one(
    tmp_path, encoder_cache
):
    """While the shuffler takes the encoded batch, hosta (its certificate) sends a report as a made-up device, as a
    user of hostb's block, and a second, different report of its first reporting device (once that one's report is
    in the queue): each is refused, counted by reason and logged; every party exits 0, and the released batch, the
    models and the composed ledger (its smallest crowd) equal the honest in-memory run."""
    from privbandits.deploy.local import start_parties
    from privbandits.deploy.p2b.party import queue_path

    spec = _spec(tmp_path)
    user, report = _first_report(spec, "hosta")
    again = EncodedReport((report.code + 1) % spec.protocol.n_codes, report.action, report.reward)
    parties = start_parties(spec, tmp_path)
    try:
        queue, start = queue_path(spec, "shuffler"), time.monotonic()
        while _held_reports(queue) < 1:
            assert time.monotonic() - start < 120, "no encoded report reached the shuffler's queue"
            time.sleep(0.005)
        key = checkpoint.load(spec.checkpoint_path("shuffler"))[0]["key"].tobytes()  # to watch for the device
        while not _queued(queue, report_id(key, f"hosta-device{user}")):
            assert time.monotonic() - start < 120, f"hosta-device{user}'s report never reached the queue"
            time.sleep(0.002)
        resolved = load_deployment(tmp_path / "deployment.resolved.toml")
        commit = checkpoint.load(spec.checkpoint_path("shuffler"))[1]["commits"]["hosta"]  # the host's own
        taken = rogue_host_reports(resolved, "hosta", "share_encoded", (user, again), commit)
        codes = _wait_all(parties, 120)
    finally:
        _kill_left(parties)
    assert codes == dict.fromkeys(codes, 0), {p.name: p.stderr[-3:] for p in parties}
    assert taken == {"invented": False, "foreign": False, "duplicate": False}
    got = outcome(spec)
    shuffler = got["results"]["shuffler"]
    assert shuffler["refused_devices"] == {"invented": 1, "foreign": 1, "duplicate": 1, "commitment": 0}
    assert sorted(re.search(r"refused \((\w+)\)", line).group(1) for line in shuffler["dropped"]) == [
        "duplicate", "foreign", "invented"]  # fmt: skip
    reference, network = run_in_memory(spec)
    [batch] = [e.message for e in network.transcript if isinstance(e.message, EncodedBatch)]
    for field in ("codes", "actions", "rewards"):
        assert np.array_equal(np.asarray(got["batches"]["encoded"][field]), getattr(batch, field)), field
    assert [(e.mechanism, e.epsilon, e.details) for e in got["ledger"].entries] == [
        (e.mechanism, e.epsilon, e.details) for e in without_baseline(reference.ledger.entries)
    ]


@pytest.mark.parametrize("resume", [pytest.param(True, marks=pytest.mark.slow), False])  # 8 to 9 s each on 2 cores
def test_a_host_restarted_without_its_state_is_refused_and_with_it_the_session_ends_as_before(
    tmp_path, encoder_cache, resume
):
    """OS entropy (the default): SIGKILL hosta while the shuffler takes the encoded batch and start it again. With
    --resume it commits to the same coins and the session ends (every party 0); without it (the issue's attack: a
    second participation chance for its devices) it commits to other coins: the shuffler refuses it, exit 4 with one
    line naming it, and releases no batch (nothing of the other coins is mixed in)."""
    from privbandits.deploy.local import start_parties, start_party
    from privbandits.deploy.p2b.party import queue_path

    spec = _spec(tmp_path, seeded=False)
    workdir = tmp_path / "run"
    workdir.mkdir()
    parties = start_parties(spec, workdir)
    by_name = {party.name: party for party in parties}
    restarted = None
    try:
        start = time.monotonic()
        while _held_reports(queue_path(spec, "shuffler")) < 20:
            assert by_name["shuffler"].process.poll() is None, "the shuffler ended before its batch"
            assert time.monotonic() - start < 120, "no encoded report reached the shuffler's queue"
            time.sleep(0.005)
        by_name["hosta"].process.send_signal(signal.SIGKILL)
        assert by_name["hosta"].process.wait(timeout=60) == -signal.SIGKILL
        restarted = start_party(workdir / "deployment.resolved.toml", "hosta", resume=resume)
        others = [party for party in parties if party.name != "hosta"]
        codes = _wait_all([*others, restarted], 180) if resume else _wait_all([by_name["shuffler"]], 180)
    finally:
        _kill_left([*parties, *([restarted] if restarted is not None else [])])
    stderr = "".join(by_name["shuffler"].stderr)
    if resume:
        assert codes == dict.fromkeys(codes, 0), {p.name: p.stderr[-3:] for p in [*parties, restarted]}
        assert sum(outcome(spec)["results"]["shuffler"]["refused_devices"].values()) == 0
        return
    assert codes == {"shuffler": 4}, stderr[-2000:]
    assert "'hosta' came back and replayed data message 1 differently" in stderr, stderr[-2000:]
    assert not spec.result_path("shuffler").exists() and not spec.result_path("server").exists()


@pytest.mark.parametrize("weakened", [True, False])
def test_a_reader_of_the_shuffler_queue_and_disk_finds_only_codes_and_ciphertexts(tmp_path, encoder_cache, weakened):
    """Issue 48's reader of the shuffler's queue. On a weakened copy (the issue's shuffler, which stored each report
    in the clear: here its queue filled with the in-memory run's reports) it reads every ``(code, action, reward)``.
    On a default run (OS entropy), read mid-batch and after the session, the queue holds codes and ciphertexts only;
    the shuffler's checkpoint and result hold codes and ciphertexts; its kept seed is gone once the batch is released;
    and the server, with its own key, opens exactly the released reports."""
    from privbandits.deploy.entropy import entropy_path
    from privbandits.deploy.local import start_parties
    from privbandits.deploy.p2b.attacks import read_queue
    from privbandits.deploy.p2b.party import queue_path, server_key_path
    from privbandits.deploy.p2b.sealing import SEALED_BYTES, Opener
    from privbandits.protocols.p2b.queue import SqliteReportQueue

    spec = _spec(tmp_path, seeded=weakened)
    if weakened:
        _, network = run_in_memory(spec)
        sent = [(e.sender, e.message) for e in network.transcript if isinstance(e.message, EncodedReport)]
        with SqliteReportQueue(tmp_path / "weak.sqlite", n_codes=32, n_arms=5) as queue:
            for number, (sender, report) in enumerate(sent):
                queue.accept(f"{number:032x}", sender, report.code, report.action, report.reward)
        read = read_queue(tmp_path / "weak.sqlite")
        assert read.clear == [(r.code, r.action, r.reward) for _, r in sent] and len(read.clear) > 100
        return
    parties = start_parties(spec, tmp_path)
    try:
        start = time.monotonic()
        while _held_reports(queue_path(spec, "shuffler")) < 20:
            assert time.monotonic() - start < 120, "no encoded report reached the shuffler's queue"
            time.sleep(0.005)
        during = read_queue(queue_path(spec, "shuffler"))
        codes = _wait_all(parties, 120)
    finally:
        _kill_left(parties)
    assert codes == dict.fromkeys(codes, 0), {p.name: p.stderr[-3:] for p in parties}
    after = read_queue(queue_path(spec, "shuffler"))
    for read in (during, after):
        assert read.clear == [] and len(read.sealed) == len(read.codes) >= 20
        assert {len(sealed) for sealed in read.sealed} == {SEALED_BYTES}
    saved, _ = checkpoint.load(spec.checkpoint_path("shuffler"))
    assert sorted(saved) == ["encoded.codes", "encoded.sealed", "key"] and saved["key"].size == 0
    results = outcome(spec)["results"]
    assert list(results["shuffler"]["batches"]["encoded"]) == ["codes"]
    assert not entropy_path(spec, "shuffler").exists() and entropy_path(spec, "hosta").exists()
    # the server's own key opens the released batch (what the shuffler saved) into exactly what the server fitted
    opener = Opener(checkpoint.load(server_key_path(spec, "server"))[0]["private"].tobytes())
    opened = [(code, *opener.open(code, sealed)) for code, sealed in
              zip(saved["encoded.codes"].tolist(), saved["encoded.sealed"], strict=True)]  # fmt: skip
    fitted = results["server"]["batches"]["encoded"]
    assert opened == list(zip(fitted["codes"], fitted["actions"], fitted["rewards"], strict=True))
    assert results["server"]["unopened_reports"] == 0 and len(opened) < len(after.codes)  # thresholded


@pytest.mark.parametrize("weakened", [True, False])
def test_a_resumed_shuffler_refuses_a_host_committed_to_other_coins(tmp_path, weakened):
    """The shuffler restarted with --resume and a device host restarted without its state: the host commits to other
    coins than the shuffler's checkpoint holds. The default shuffler refuses it (one line naming the host, exit 2 as a
    deployment error); a weakened copy that kept no commitments (the issue's shuffler) takes it."""
    from privbandits.comm import InMemoryNetwork, Party
    from privbandits.deploy.deployment import DeploymentError
    from privbandits.deploy.p2b.messages import HostCommit
    from privbandits.deploy.p2b.party import _commits
    from privbandits.deploy.p2b.rejoin import save_shuffler
    from privbandits.deploy.p2b.session import COMMIT

    spec = _spec(tmp_path, seeded=False, data=False)
    before = {"hosta": "hosta's coins", "hostb": "hostb's coins"}
    save_shuffler(spec, "shuffler", bytes(32), 0, {}, {} if weakened else before)
    network = InMemoryNetwork()
    shuffler = Party("shuffler", network)
    shuffler.hosts, shuffler.key, shuffler.batch_id = spec.names("device_host"), bytes(32), 0  # what _commits reads
    with network.phase(COMMIT):
        Party("hosta", network).send("shuffler", HostCommit("other coins"))  # restarted without --resume
        Party("hostb", network).send("shuffler", HostCommit(before["hostb"]))
    if weakened:
        assert _commits(spec, "shuffler", shuffler, resume=True) == {"hosta": "other coins", "hostb": "hostb's coins"}
        return
    with pytest.raises(DeploymentError, match=r"^device host 'hosta' came back committed to other coins than at the "
                                              r"start of the session \(restarted without --resume"):
        _commits(spec, "shuffler", shuffler, resume=True)


def _kill_left(parties) -> None:
    """Every party process still running killed (a test that failed midway leaves none behind)."""
    for party in parties:
        if party.process.poll() is None:
            party.process.kill()
