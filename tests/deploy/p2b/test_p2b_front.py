"""The P2B shuffler's concurrent device front end (``privbandits.deploy.p2b.front``) and the load generator
(``privbandits deploy load``), issue 34.

Front-end tests: 127.0.0.1, ephemeral ports, the shuffler and two device hosts linked in threads, two worker
processes taking the devices' connections; many devices of both hosts send at once. Every acknowledged report is
in the batch exactly once, in the canonical order; a device that sends again after its acknowledgement (as after
a lost one) is not counted twice; a batch full by ``batch_size`` refuses the rest and counts them.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from project_paths import SHIPPED_DEPLOYMENTS
from tls_links import Background, linked
from typer.testing import CliRunner

from privbandits.comm import Party, TlsCredentials
from privbandits.comm.oneshot import send_own
from privbandits.deploy.certs import write_development_pki
from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import DeploymentError, load_deployment
from privbandits.deploy.p2b.admission import Admission
from privbandits.deploy.p2b.front import Front
from privbandits.deploy.p2b.messages import SealedBatch, SealedReport
from privbandits.deploy.p2b.party import BatchOpen
from privbandits.deploy.p2b.roles import CanonicalShuffler
from privbandits.deploy.p2b.sealing import Opener, new_private_key, public_key, seal
from privbandits.deploy.p2b.session import SHARE_ENCODED
from privbandits.privacy.ledger import PrivacyLedger
from privbandits.protocols.p2b.core import CloseBatch
from privbandits.protocols.p2b.queue import SqliteReportQueue

HOSTS = ["hosta", "hostb"]
EXAMPLE = SHIPPED_DEPLOYMENTS / "p2b.toml"


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, TlsCredentials]:
    ca, files = write_development_pki(tmp_path_factory.mktemp("pki"), ["shuffler", *HOSTS])
    return {name: TlsCredentials(ca, f.certificate, f.key) for name, f in files.items()}


@pytest.fixture
def session(pki, tmp_path):
    """The linked networks, a shuffler with a 2-worker front end and its queue; everything closed afterwards."""
    nets = linked(pki, ["shuffler", *HOSTS], keep_listening=True, deadline=8.0)
    front = Front(nets["shuffler"], HOSTS, 2).start()
    queue = SqliteReportQueue(tmp_path / "queue.sqlite", n_codes=8, n_arms=3)
    yield nets, front, queue
    front.stop()
    queue.close()
    for net in nets.values():
        net.abort("test over")


def shuffler_of(nets, front, queue, batch_size=None):
    return CanonicalShuffler("shuffler", nets["shuffler"], hosts=HOSTS, queue=queue, key=bytes(range(32)),
                             batch_size=batch_size, front=front, threshold=None, participation=0.5, n_codes=None,
                             rng=np.random.default_rng(0), ledger=PrivacyLedger(),
                             admission=Admission({f"{host}-device{u}": host for host in HOSTS for u in range(100)}))


KEY = new_private_key()
"""The server's key the devices seal to (the shuffler sees codes and ciphertexts only)."""


def reports_of(host: int, users: range) -> dict[str, SealedReport]:
    return {f"{HOSTS[host]}-device{u}": sealed(u % 8, u % 3, u % 2) for u in users}


def sealed(code: int, action: int, reward: int) -> SealedReport:
    return SealedReport(code, seal(public_key(KEY), code, action, reward))


def plain(report: SealedReport) -> tuple:
    """What the server opens of ``report``: ``(code, action, reward)``."""
    return report.code, *Opener(KEY).open(report.code, report.sealed)


def host_sends(net, devices: dict[str, SealedReport], again: list[str], forged: dict[str, SealedReport]) -> dict:
    """Device host ``net``: once the batch opens, its devices send at once (8 connections in flight), then the
    devices in ``again`` send the same report once more and those in ``forged`` another report under their name;
    then it closes the batch. Each send's answer (True: stored, False: refused)."""
    party = getattr(net, "test_party", None)
    if party is None:  # a party registers once per network
        party = net.test_party = Party(net.local, net)
    with net.phase(SHARE_ENCODED):
        party.receive(BatchOpen.kind, "shuffler")
        with ThreadPoolExecutor(8) as pool:
            sent = list(pool.map(lambda device: send_own(net, device, "shuffler", devices[device]), devices))
        answers = dict(zip(devices, sent, strict=True))
        resent = [send_own(net, device, "shuffler", devices[device]) for device in again]
        refused = [send_own(net, device, "shuffler", report) for device, report in forged.items()]
        party.send("shuffler", CloseBatch())
    return {"answers": answers, "resent": resent, "forged": refused}


def test_many_devices_at_once_every_acknowledged_report_in_the_batch_once_in_canonical_order(session):
    nets, front, queue = session
    shuffler = shuffler_of(nets, front, queue)
    devices = [reports_of(0, range(0, 30)), reports_of(1, range(30, 60))]
    again = [list(devices[0])[:3], list(devices[1])[-2:]]
    forged = [{"hosta-device4": sealed(7, 2, 1)}, {}]
    jobs = [Background(lambda i=i: host_sends(nets[HOSTS[i]], devices[i], again[i], forged[i])) for i in range(2)]
    with nets["shuffler"].phase(SHARE_ENCODED):
        batch = shuffler.collect_batch(SealedReport.kind)
    results = [job.result() for job in jobs]
    assert all(all(result["answers"].values()) and all(result["resent"]) for result in results)
    assert results[0]["forged"] == [False]  # another report under a stored one's name: refused, not stored
    expected = [*devices[0].values(), *devices[1].values()]  # hosts in deployment order, users ascending
    assert [plain(r) for r in batch] == [plain(r) for r in expected]
    assert shuffler.duplicates == 5 and shuffler.refused == [0]
    assert len(queue.batch(0)) == 60 and queue.held() == 0 and queue.held_senders() == []
    dropped = nets["shuffler"].dropped
    assert len(dropped) == 1 and "already accepted with another report" in dropped[0]
    assert "device4" not in dropped[0]  # the reason names the host, not the device
    heard = nets["shuffler"].received.links  # one row per host's devices (not per device): 30 reports, 2 sent again
    assert heard[(SHARE_ENCODED, f"{HOSTS[1]} devices", "shuffler")].messages == 32


def test_once_released_the_key_is_forgotten_and_a_replay_is_taken_as_duplicates(session):
    """After the batch is released the shuffler forgets its report-id key (saved empty: nothing is left that links a
    batched report's id to its device); a replay of the session's reports is acknowledged, counted as duplicates and
    changes nothing in the queue."""
    nets, front, queue = session
    forgotten = []
    shuffler = shuffler_of(nets, front, queue)
    shuffler.forget_key = lambda: forgotten.append(True) or b""
    shuffler.order = {"an id": 0}  # the canonical order by id: forgotten with the key
    devices = [reports_of(0, range(0, 8)), reports_of(1, range(8, 16))]
    for attempt in range(2):
        jobs = [Background(lambda i=i: host_sends(nets[HOSTS[i]], devices[i], [], {})) for i in range(2)]
        with nets["shuffler"].phase(SHARE_ENCODED):
            batch = shuffler.collect_batch(SealedReport.kind)
            assert all(all(job.result()["answers"].values()) for job in jobs)
        assert len(batch) == 16
        shuffler._mark_released()  # what sending the EncodedBatch to the server does once it is sent
        assert (shuffler.key, shuffler.order, len(forgotten)) == (b"", {}, attempt + 1)
        assert shuffler.duplicates == 16 * attempt
        assert queue.released(0) and len(queue.batch(0)) == 16 and queue.held() == 0 and queue.batches() == [0]


def test_a_restarted_shuffler_replays_a_released_batch_through_the_front_end_without_the_queue(session):
    """``--resume`` after the encoded batch went out (its release in the checkpoint): every device's report sent
    again is acknowledged through the workers and counted as replayed, nothing is stored, and the saved batch is
    sent again as it was."""
    nets, front, queue = session
    shuffler, sent = shuffler_of(nets, front, queue), []
    to_hosts = shuffler.send
    shuffler.send = lambda to, message: sent.append((to, message)) if to == "server" else to_hosts(to, message)
    saved = SealedBatch(np.array([1, 2]), np.stack([sealed(1, 0, 1).sealed, sealed(2, 1, 0).sealed]))
    devices = [reports_of(0, range(0, 6)), reports_of(1, range(6, 12))]
    jobs = [Background(lambda i=i: host_sends(nets[HOSTS[i]], devices[i], [], {})) for i in range(2)]
    with nets["shuffler"].phase(SHARE_ENCODED):
        shuffler.replay(SealedReport.kind, "server", (saved, {"released": 2}, [], 0))
    assert all(all(job.result()["answers"].values()) for job in jobs)
    assert (shuffler.replayed, shuffler.duplicates, shuffler.refused, shuffler.batch_ids) == (12, 0, [0], [0])
    assert sent == [("server", saved)] and shuffler.last_release == {"released": 2}
    assert queue.held() == 0 and queue.batches() == []


def test_the_serial_front_end_gives_the_same_batch(pki, tmp_path):
    """``workers = 0``: the shuffler takes the devices itself, host by host, one connection at a time."""
    nets = linked(pki, ["shuffler", *HOSTS], keep_listening=True, deadline=8.0)
    queue = SqliteReportQueue(tmp_path / "queue.sqlite", n_codes=8, n_arms=3)
    try:
        shuffler = shuffler_of(nets, None, queue)
        devices = [reports_of(0, range(0, 10)), reports_of(1, range(10, 20))]
        again = [list(devices[0])[:2], []]
        jobs = [Background(lambda i=i: host_sends(nets[HOSTS[i]], devices[i], again[i], {})) for i in range(2)]
        with nets["shuffler"].phase(SHARE_ENCODED):
            batch = shuffler.collect_batch(SealedReport.kind)
        assert all(all(job.result()["answers"].values()) for job in jobs)
        expected = [*devices[0].values(), *devices[1].values()]
        assert [plain(r) for r in batch] == [plain(r) for r in expected]
        assert shuffler.duplicates == 2 and len(queue.batch(0)) == 20 and queue.held_senders() == []
    finally:
        queue.close()
        for net in nets.values():
            net.abort("test over")


def test_a_full_batch_refuses_the_later_devices_and_counts_them(session):
    nets, front, queue = session
    shuffler = shuffler_of(nets, front, queue, batch_size=25)
    devices = [reports_of(0, range(0, 20)), reports_of(1, range(20, 40))]
    jobs = [Background(lambda i=i: host_sends(nets[HOSTS[i]], devices[i], [], {})) for i in range(2)]
    with nets["shuffler"].phase(SHARE_ENCODED):
        batch = shuffler.collect_batch(SealedReport.kind)
    answers = {device: ok for job in jobs for device, ok in job.result()["answers"].items()}
    stored = sorted(device for device, ok in answers.items() if ok)
    assert len(batch) == len(stored) == 25 and shuffler.refused == [15] and shuffler.collected == 25
    every = {**devices[0], **devices[1]}
    assert sorted(queue.batch(0).codes.tolist()) == sorted(every[device].code for device in stored)
    assert nets["shuffler"].dropped == []


def test_the_workers_setting_is_validated_naming_the_field(tmp_path):
    for value, why in (("-1", "greater than or equal to 0"), ("1.5", "integer"), ("257", "less than or equal to 256")):
        path = tmp_path / "p2b.toml"
        path.write_text(EXAMPLE.read_text().replace('tie_break = "random"', f'tie_break = "random"\nworkers = {value}'))
        with pytest.raises(DeploymentError, match=rf"protocol\.workers.*{why}"):
            load_deployment(path)


def test_unset_workers_take_one_per_cpu_and_with_them_the_shuffler_dials_every_peer(tmp_path):
    """The concurrent front end with rejoining parties (the shipped file): its workers hold the shuffler's listener,
    so the shuffler dials every peer (last in the link order), also one that comes back; with ``workers = 0`` (the
    serial front end) the file's order stands."""
    from privbandits.deploy.p2b.front import worker_count
    from privbandits.deploy.p2b.party import link_order

    shipped = load_deployment(EXAMPLE)
    assert (shipped.protocol.workers, shipped.protocol.rejoin_s) == (None, 30)
    assert worker_count(shipped.protocol) == len(os.sched_getaffinity(0))
    assert link_order(shipped) == ["server", "hosta", "hostb", "shuffler"]
    path = tmp_path / "p2b.toml"
    path.write_text(EXAMPLE.read_text().replace('tie_break = "random"', 'tie_break = "random"\nworkers = 0'))
    serial = load_deployment(path)
    assert worker_count(serial.protocol) == 0 and link_order(serial) is None


# -- the load generator -------------------------------------------------------------------------------
def load_file(folder: Path, **replace: str) -> Path:
    text = re.sub(r'address = "127\.0\.0\.1:\d+"', 'address = "127.0.0.1:0"', EXAMPLE.read_text())
    for old, new in replace.items():
        text = text.replace(old, new)
    path = folder / "p2b.toml"
    path.write_text(text.replace('tie_break = "random"', 'tie_break = "random"\nworkers = 2\nrejoin_s = 0'))
    assert CliRunner().invoke(standalone, ["deploy", "certs", str(path)]).exit_code == 0
    return path


def test_deploy_load_drives_devices_through_a_local_shuffler_and_reports_the_rate(tmp_path):
    bounded = {"deadline_s = 30 ": "deadline_s = 5 ", "connect_deadline_s = 60": "connect_deadline_s = 20"}
    path = load_file(tmp_path, **bounded)  # a stall fails within about a minute
    command = ["deploy", "load", str(path), "--devices", "12", "--processes", "1", "--concurrency", "4", "--local",
               "--no-progress"]  # fmt: skip
    done = CliRunner().invoke(standalone, command, terminal_width=200)
    assert done.exit_code == 0, done.output
    assert re.search(r"^12 of 12 reports accepted in [\d.]+ s: [\d,]+ accepted reports/s; latency p50 [\d.]+ ms, "
                     r"p90 [\d.]+ ms, p99 [\d.]+ ms; 0 refused, 0 failed$", done.output, re.M), done.output  # fmt: skip
    assert "shuffler: exit 0" in done.output and "server: exit 0" in done.output
    import json

    shuffler = json.loads((tmp_path / "out" / "shuffler.result.json").read_text())
    assert shuffler["release"]["encoded"]["received"] == 12 and shuffler["queue"]["duplicates"] == 0


@pytest.mark.parametrize(
    ("arguments", "replace", "error"),
    [
        (["--devices", "0"], {}, "--devices must be an integer in [1, 10000000] (simulated devices, one TLS "
         "connection each), got 0"),
        (["--processes", "0"], {}, "--processes must be an integer >= 1, got 0"),
        (["--rate", "-5"], {}, "--rate must be a number of reports per second >= 0 (0: unpaced), got -5.0"),
        (["--devices", "100000", "--rate", "10"], {},
         "--devices 100000 at --rate 10 take 10000 s; the server waits 102 s for the batch (raise deadline_s or "
         "n_users, or lower --devices)"),
        ([], {'name = "p2b"\n': 'name = "p2b"\nraw_baseline = true\n'},
         "protocol.raw_baseline: `deploy load` sends encoded reports only; set it to false"),
    ],
)  # fmt: skip
def test_deploy_load_refuses_bad_input_with_one_line(tmp_path, arguments, replace, error):
    path = load_file(tmp_path, **replace)
    done = CliRunner().invoke(standalone, ["deploy", "load", str(path), "--local", *arguments], terminal_width=400)
    assert done.exit_code == 2
    assert done.output.strip() == f"error: {error}"
    assert not (tmp_path / "out").exists()  # nothing started


def test_deploy_load_without_local_needs_fixed_ports(tmp_path):
    done = CliRunner().invoke(standalone, ["deploy", "load", str(load_file(tmp_path))], terminal_width=400)
    assert done.exit_code == 2 and len(done.output.strip().splitlines()) == 1, done.output
    assert "port 0" in done.output or ":0" in done.output, done.output


def host_sends_one_wrong(net, devices: dict[str, SealedReport], wrong: str) -> dict:
    """Device host ``net``: its devices send their reports, and device ``wrong`` a message of another kind
    (a :class:`CloseBatch`) in the middle; then the host closes the batch. Each send's answer."""
    party = Party(net.local, net)
    with net.phase(SHARE_ENCODED):
        party.receive(BatchOpen.kind, "shuffler")
        names = list(devices)
        answers = {device: send_own(net, device, "shuffler", devices[device]) for device in names[:3]}
        answers[wrong] = send_own(net, wrong, "shuffler", CloseBatch())
        answers |= {device: send_own(net, device, "shuffler", devices[device]) for device in names[3:]}
        party.send("shuffler", CloseBatch())
    return answers


@pytest.mark.parametrize("workers", [0, 2])
def test_one_device_sending_another_kind_of_message_is_dropped_and_the_batch_goes_on(pki, tmp_path, workers):
    """Issue 48: with either front end, a device that sends a message of the wrong kind is refused, counted and
    logged; every other device's report is in the batch and the session goes on (with ``workers = 0`` it ended
    the session)."""
    nets = linked(pki, ["shuffler", *HOSTS], keep_listening=True, deadline=8.0)
    front = Front(nets["shuffler"], HOSTS, workers).start() if workers else None
    queue = SqliteReportQueue(tmp_path / "queue.sqlite", n_codes=8, n_arms=3)
    try:
        shuffler = shuffler_of(nets, front, queue)
        devices = [reports_of(0, range(0, 6)), reports_of(1, range(10, 16))]
        wrong = f"{HOSTS[0]}-device99"
        jobs = [Background(lambda: host_sends_one_wrong(nets[HOSTS[0]], devices[0], wrong)),
                Background(lambda: host_sends_one_wrong(nets[HOSTS[1]], devices[1], f"{HOSTS[1]}-device98"))]
        with nets["shuffler"].phase(SHARE_ENCODED):
            batch = shuffler.collect_batch(SealedReport.kind)
        answers = [job.result() for job in jobs]
        assert [a.pop(w) for a, w in zip(answers, [wrong, f"{HOSTS[1]}-device98"], strict=True)] == [False, False]
        assert all(all(a.values()) for a in answers)
        expected = [*devices[0].values(), *devices[1].values()]
        assert sorted(plain(r) for r in batch) == sorted(plain(r) for r in expected)
        dropped = nets["shuffler"].dropped
        assert sum("sent a 'p2b.close_batch' message" in reason for reason in dropped) == 2, dropped
    finally:
        if front is not None:
            front.stop()
        queue.close()
        for net in nets.values():
            net.abort("test over")
