"""The P2B deployment with its shuffler's report queue in PostgreSQL (``protocol.queue_url``, issue 34): the small
deployment gives the results it gives with the SQLite queue (and the in-memory run's), the queue is left formed,
released and without identities, and a bad or password-bearing URL is refused naming the field.

The server is the session's throw-away one (``tests/pg_server.py``); the tests that need it skip, saying why,
where it cannot start.
"""

from __future__ import annotations

import json
import time

import p2b_deployment
import pytest
import small_deployments
from pg_server import psycopg_missing
from typer.testing import CliRunner

from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import DeploymentError, load_deployment
from privbandits.deploy.p2b.outcome import outcome, run_in_memory
from privbandits.deploy.p2b.party import open_queue
from privbandits.protocols.p2b.core import EncodedBatch
from privbandits.protocols.p2b.queue import PostgresReportQueue


def with_queue_url(path, url: str):
    """The deployment file at ``path`` with its shuffler's queue at ``url``."""
    text = path.read_text()
    assert 'name = "p2b"\n' in text
    path.write_text(text.replace('name = "p2b"\n', f'name = "p2b"\nqueue_url = "{url}"\n'))
    return path


def run(path):
    result = CliRunner().invoke(standalone, ["deploy", "local", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    return load_deployment(path)


def comparable(spec) -> dict:
    """What a run's parties produced: batches, models, late users' rewards, ledger (not timings, not where)."""
    got = outcome(spec)
    ledger = [(e.mechanism, e.epsilon, e.details) for e in got["ledger"].entries]
    return {"batches": got["batches"], "models": got["models"], "late": got["late"], "ledger": ledger}


@pytest.mark.slow  # two deployments of four processes each: 144 s here (2 cores, load average 21)
def test_the_small_deployment_on_a_postgresql_queue_gives_the_sqlite_queues_results(
    tmp_path, postgres_server, encoder_cache
):
    url = postgres_server.database()
    specs = {}
    for backend in ("sqlite", "postgres"):
        (tmp_path / backend).mkdir()
        path = small_deployments.deployment("p2b", tmp_path / backend, deadline_s=60)
        specs[backend] = run(with_queue_url(path, url) if backend == "postgres" else path)
    assert specs["postgres"].protocol.queue_url == url and specs["sqlite"].protocol.queue_url is None
    assert comparable(specs["postgres"]) == comparable(specs["sqlite"])
    small_deployments.assert_equals_in_memory("p2b", specs["postgres"], flooded=False)
    assert not (specs["postgres"].output / "queues").exists()  # no SQLite file beside the results

    shuffler = json.loads(specs["postgres"].result_path("shuffler").read_text())
    assert shuffler["queue"]["path"] == f"{url} (schema shuffler)" and shuffler["queue"]["batches"] == [0]
    with PostgresReportQueue(url, schema="shuffler") as queue:
        assert queue.batches() == [0] and queue.unreleased() == [] and queue.held() == 0
        sent = [outcome(specs["postgres"])["results"][host]["encoded_reports_sent"] for host in ("hosta", "hostb")]
        assert len(queue.batch(0)) == sum(sent) > 0  # every report the devices sent, once
        assert queue._execute("SELECT count(*) FROM reports WHERE sender IS NOT NULL").fetchone()[0] == 0


def with_front_ends(path, url: str, fronts: tuple[str, ...]):
    """The deployment file at ``path`` with its shuffler's queue at ``url`` and the shuffler's front ends ``fronts``
    (each on its own port; the concurrent front end with one worker each, so no party may rejoin)."""
    with_queue_url(path, url)
    text = path.read_text().replace('name = "p2b"\n', 'name = "p2b"\nrejoin_s = 0\nworkers = 1\n')
    for front in fronts:
        text += f'\n[parties.{front}]\nrole = "shuffler_front"\naddress = "127.0.0.1:0"\n'
    path.write_text(text)
    return path


@pytest.mark.slow  # two deployments of four and six processes
def test_two_front_ends_on_one_postgresql_queue_release_the_batch_of_one(
    tmp_path, postgres_server, encoder_cache
):
    specs, url = {}, postgres_server.database()  # one database: the second session's batch is 1
    for fronts in ((), ("fronta", "frontb")):
        folder = tmp_path / (fronts[0] if fronts else "shuffler")
        folder.mkdir()
        path = p2b_deployment.local_copy(folder, raw_baseline=False, **{"n_users = 3000": "n_users = 400"})
        path = with_front_ends(path, url, fronts)
        specs[fronts] = p2b_deployment.deployed(path)
    one, two = specs[()], specs[("fronta", "frontb")]
    assert comparable(two) == comparable(one)
    _assert_released_as_in_memory(two, comparable(two)["batches"]["encoded"])  # in the same order

    results = small_deployments.results(two)
    took = {front: results[front]["took"]["encoded"] for front in ("fronta", "frontb")}
    sent = sum(results[host]["encoded_reports_sent"] for host in ("hosta", "hostb"))
    assert sum(counts["collected"] for counts in took.values()) == sent == results["shuffler"]["release"]["encoded"][
        "received"]  # fmt: skip
    assert min(counts["collected"] for counts in took.values()) > 0  # each took a share of the devices
    assert all(counts["duplicates"] == 0 for counts in took.values())
    assert results["shuffler"]["queue"]["batches"] == [1]
    with PostgresReportQueue(url, schema="shuffler") as queue:
        assert queue.batches() == [0, 1] and queue.unreleased() == [] and queue.held() == 0
        assert queue._execute("SELECT count(*) FROM reports WHERE sender IS NOT NULL").fetchone()[0] == 0


def test_deploy_load_spreads_the_devices_over_the_front_ends_and_the_shuffler_batches_them_all(
    tmp_path, postgres_server, encoder_cache
):
    url = postgres_server.database()
    path = p2b_deployment.local_copy(tmp_path, raw_baseline=False, seeded=False, **{
        "deadline_s = 30 ": "deadline_s = 5 ", "connect_deadline_s = 60": "connect_deadline_s = 20"})  # fmt: skip
    path = with_front_ends(path, url, ("fronta", "frontb"))
    assert CliRunner().invoke(standalone, ["deploy", "certs", str(path)]).exit_code == 0
    command = ["deploy", "load", str(path), "--devices", "40", "--processes", "1", "--concurrency", "4", "--local",
               "--no-progress"]  # fmt: skip
    done = CliRunner().invoke(standalone, command, terminal_width=200)
    assert done.exit_code == 0, done.output
    assert "40 of 40 reports accepted in " in done.output and "0 refused, 0 failed" in done.output
    assert all(f"{party}: exit 0" in done.output for party in ("shuffler", "server", "fronta", "frontb"))
    got = {name: json.loads((tmp_path / "out" / f"{name}.result.json").read_text())
           for name in ("shuffler", "fronta", "frontb")}  # fmt: skip
    assert [got[front]["took"]["encoded"]["collected"] for front in ("fronta", "frontb")] == [20, 20]  # u mod 2
    assert got["shuffler"]["release"]["encoded"]["received"] == 40 and got["shuffler"]["queue"]["duplicates"] == 0
    with PostgresReportQueue(url, schema="shuffler") as queue:
        assert len(queue.batch(0)) == 40 and queue.unreleased() == [] and queue.held() == 0


def test_a_postgresql_queue_left_with_held_reports_is_not_reused_by_a_fresh_session(tmp_path, postgres_server):
    url = postgres_server.database()
    spec = load_deployment(with_queue_url(p2b_deployment.local_copy(tmp_path), url))
    queue = open_queue(spec, "shuffler")  # a fresh queue opens
    queue.accept("0" * 32, "hosta", 3, 1, 1)
    queue.close()
    with pytest.raises(DeploymentError) as error:
        open_queue(spec, "shuffler")
    assert str(error.value) == (
        f"the shuffler's report queue {url} (schema shuffler) holds 1 report(s) and unreleased batch(es) [] of an "
        "interrupted session; move it away to start afresh"
    )
    open_queue(spec, "shuffler", resume=True).close()  # a resumed session continues with it


def test_an_unreachable_queue_stops_the_shuffler_in_one_line_without_the_password(tmp_path, monkeypatch):
    if psycopg_missing() is not None:
        pytest.skip(psycopg_missing())
    monkeypatch.setenv("PGPASSWORD", "hunter2")  # where the password belongs: libpq reads it, no file holds it
    url = "postgresql://shuffler@/p2b?host=/nonexistent&connect_timeout=2"
    spec = load_deployment(with_queue_url(p2b_deployment.local_copy(tmp_path), url))
    with pytest.raises(DeploymentError) as error:
        open_queue(spec, "shuffler")
    message = str(error.value)
    assert message.startswith(
        f"the shuffler's report queue {url}: PostgresReportQueue: url '{url}' cannot be opened as a report queue: "
    )
    assert "\n" not in message and "hunter2" not in message


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("postgresql://shuffler:hunter2@db.example/p2b", "protocol.queue_url: must not hold a password (this file is "
         "copied to every host and beside the results): give it in PGPASSWORD or ~/.pgpass, or use a client "
         "certificate (sslcert, sslkey), got 'postgresql://shuffler@db.example/p2b'"),
        ("sqlite:///tmp/queue", "protocol.queue_url: must be a postgresql:// URL "
         "(postgresql://USER@HOST:PORT/DATABASE), got 'sqlite:///tmp/queue'"),
    ],
)  # fmt: skip
def test_a_bad_queue_url_is_refused_naming_the_field_not_the_password(tmp_path, url, error):
    path = with_queue_url(p2b_deployment.local_copy(tmp_path), url)
    with pytest.raises(DeploymentError) as refused:
        load_deployment(path)
    assert str(refused.value) == f"{path}: {error}"


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (("queue_url = ", "# queue_url = "), "protocol.queue_url: with shuffler_front parties (fronta) it must be a "
         "postgresql:// URL: the front ends and the shuffler share that queue (a SQLite file cannot be shared across "
         "hosts); got unset"),
        (("workers = 1\n", "workers = 0\n"), "protocol.workers: with shuffler_front parties (fronta) it must be unset "
         "or at least 1 (the concurrent front end at each front end); got 0"),
        (("rejoin_s = 0\n", "rejoin_s = 0\nraw_baseline = true\n"), "protocol.raw_baseline: with shuffler_front "
         "parties (fronta) it must be false: the raw baseline's reports are not queued; got true"),
        (("rejoin_s = 0\n", "rejoin_s = 0\nbatch_size = 100\n"), "protocol.batch_size: with shuffler_front parties "
         "(fronta) it must be unset: a limit counted across front ends is not built; got 100"),
        (("rejoin_s = 0\n", "rejoin_s = 0\nbatch_window_s = 2.5\n"), "protocol.batch_window_s: with shuffler_front "
         "parties (fronta) it must be unset: a limit counted across front ends is not built; got 2.5"),
    ],
)  # fmt: skip
def test_front_ends_are_refused_where_they_cannot_work_naming_the_field(tmp_path, change, error):
    path = p2b_deployment.local_copy(tmp_path, raw_baseline=False)
    path = with_front_ends(path, "postgresql://shuffler@db.example/p2b", ("fronta",))
    assert load_deployment(path).names("shuffler_front") == ["fronta"]  # as written, it loads
    old, new = change
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    with pytest.raises(DeploymentError) as refused:
        load_deployment(path)
    assert str(refused.value) == f"{path}: {error}"


def _held_in(url: str) -> int:
    """Reports the shuffler's PostgreSQL queue holds, not yet batched (0 before its tables exist)."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as db:
            return db.execute("SELECT count(*) FROM shuffler.reports WHERE batch_id IS NULL").fetchone()[0]
    except psycopg.Error:
        return 0


def _started_with_front_ends(tmp_path, url: str, rejoin_s: float = 0):
    """The small deployment (1,000 users) with two front ends on ``url`` and ``rejoin_s``, its certificates and
    data made, every party started: the spec, the run folder, the parties by name, and when they were started."""
    from privbandits.deploy.local import start_parties

    path = p2b_deployment.local_copy(tmp_path, raw_baseline=False, **{
        "n_users = 3000": "n_users = 1000", "deadline_s = 30 ": "deadline_s = 10 "})  # fmt: skip
    path = with_front_ends(path, url, ("fronta", "frontb"))
    path.write_text(path.read_text().replace("rejoin_s = 0\n", f"rejoin_s = {rejoin_s:g}\n"))
    runner = CliRunner()
    for command in (["deploy", "certs", str(path)], ["deploy", "data", str(path)]):
        assert runner.invoke(standalone, command).exit_code == 0
    spec = load_deployment(path)
    workdir, start = tmp_path / "run", time.monotonic()
    workdir.mkdir()
    return spec, workdir, {party.name: party for party in start_parties(spec, workdir)}, start


def _assert_released_as_in_memory(spec, batch: dict) -> None:
    """The encoded batch a deployment released is the in-memory run's, element for element."""
    _, network = run_in_memory(spec)
    released = next(e.message for e in network.transcript if e.message.kind == EncodedBatch.kind)
    assert {field: batch[field] for field in ("codes", "actions", "rewards")} == {
        field: getattr(released, field).tolist() for field in ("codes", "actions", "rewards")}  # fmt: skip


@pytest.mark.slow  # two sessions of six processes
def test_a_front_end_killed_mid_batch_ends_the_session_and_every_party_resumed_ends_it_as_uninterrupted(
    tmp_path, postgres_server, encoder_cache
):
    """SIGKILL a front end while the devices send (rejoin_s = 0): every other party stops naming a lost peer (exit
    3) and no report a device had acknowledged is lost. Every party restarted with --resume: the hosts replay, the
    front ends keep each report once, and the released batch is the uninterrupted session's."""
    import signal

    from p2b_deployment import _wait_all

    from privbandits.deploy.local import start_party
    from privbandits.deploy.party import EXIT_LOST

    url = postgres_server.database()
    spec, workdir, by_name, start = _started_with_front_ends(tmp_path, url)
    parties = list(by_name.values())
    try:
        while _held_in(url) < 20:
            assert by_name["fronta"].process.poll() is None, "the front end ended before the batch"
            assert time.monotonic() - start < 300, "no report reached the queue in 300 s"
            time.sleep(0.01)
        by_name["fronta"].process.send_signal(signal.SIGKILL)
        codes = _wait_all(parties, 10 * (time.monotonic() - start) + 60)
    finally:
        for party in parties:
            if party.process.poll() is None:
                party.process.kill()
    assert codes.pop("fronta") == -signal.SIGKILL
    assert codes == dict.fromkeys(codes, EXIT_LOST), {name: by_name[name].last_error for name in codes}
    assert all("lost peer" in by_name[name].last_error for name in codes)
    assert _held_in(url) >= 20  # the acknowledged reports stay in the queue
    assert not any(spec.result_path(name).exists() for name in spec.parties)

    resolved = workdir / "deployment.resolved.toml"
    restarted = [start_party(resolved, name, resume=True) for name in spec.parties]
    codes = _wait_all(restarted, 120)
    assert codes == dict.fromkeys(codes, 0), {party.name: party.stderr[-3:] for party in restarted}
    got = outcome(spec)
    assert got["results"]["shuffler"]["resumed"] is True
    _assert_released_as_in_memory(spec, got["batches"]["encoded"])
    took = [got["results"][front]["took"]["encoded"] for front in ("fronta", "frontb")]
    assert sum(counts["duplicates"] for counts in took) >= 20  # stored before the kill: kept once
    with PostgresReportQueue(url, schema="shuffler") as queue:
        assert queue.batches() == [0] and queue.unreleased() == [] and queue.held() == 0


def _released_in(url: str) -> bool:
    """Whether the shuffler's PostgreSQL queue has marked a batch released."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as db:
            return db.execute("SELECT count(*) FROM shuffler.batches WHERE released_at IS NOT NULL").fetchone()[0] > 0
    except psycopg.Error:
        return False


@pytest.mark.slow  # one session of six processes, one restarted
@pytest.mark.parametrize(("victim", "when"), [("fronta", "mid-batch"), ("shuffler", "mid-batch"),
                                             ("hosta", "mid-batch"), ("hostb", "released")])  # fmt: skip
def test_a_party_of_a_scaled_out_shuffler_killed_and_restarted_alone_rejoins(
    tmp_path, postgres_server, encoder_cache, victim, when
):
    """With ``rejoin_s > 0``: SIGKILL a front end, the shuffler or a device host while the devices send (or a host
    once the batch is released: the front ends stay up until every host is done, and take its devices' replayed
    reports without storing them), restart only it with --resume; the others wait for it, and the session ends with
    the uninterrupted session's batch, every report in the shared queue once."""
    import signal

    from p2b_deployment import _restart_alone

    url = postgres_server.database()
    spec, workdir, by_name, start = _started_with_front_ends(tmp_path, url, rejoin_s=20)
    parties = list(by_name.values())
    try:
        while (_held_in(url) < 20) if when == "mid-batch" else not _released_in(url):
            assert time.monotonic() - start < 300, f"not {when} in 300 s"
            time.sleep(0.01)
        by_name[victim].process.send_signal(signal.SIGKILL)
    except BaseException:
        for party in parties:
            party.process.kill()
        raise
    codes, restarted = _restart_alone(parties, victim, workdir, 10 * (time.monotonic() - start) + 60)
    assert codes == dict.fromkeys(codes, 0), {p.name: p.stderr[-3:] for p in [*parties, restarted]}
    got = outcome(spec)
    assert got["results"][victim]["resumed"] is True
    _assert_released_as_in_memory(spec, got["batches"]["encoded"])
    with PostgresReportQueue(url, schema="shuffler") as queue:
        assert queue.batches() == [0] and queue.unreleased() == [] and queue.held() == 0
    if when == "released":  # its devices' reports came again after the batch closed: acknowledged, not taken
        replayed = sum(got["results"][front]["replayed_reports"] for front in ("fronta", "frontb"))
        assert replayed == got["results"]["hostb"]["encoded_reports_sent"] > 0


def test_front_ends_link_with_the_shuffler_only_and_dial_it(tmp_path):
    """Their listeners (held by their workers) take only devices: each front end dials the shuffler, which dials
    the rest; no host or server links with a front end (the devices need no party link)."""
    from privbandits.deploy.p2b.party import link_order
    from privbandits.deploy.p2b.scaleout import front_of, linked_peers

    path = p2b_deployment.local_copy(tmp_path, raw_baseline=False)
    spec = load_deployment(with_front_ends(path, "postgresql://shuffler@db.example/p2b", ("fronta", "frontb")))
    assert link_order(spec) == ["server", "hosta", "hostb", "shuffler", "fronta", "frontb"]
    assert linked_peers(spec, "fronta") == ["shuffler"]
    assert linked_peers(spec, "shuffler") == ["server", "hosta", "hostb", "fronta", "frontb"]
    assert linked_peers(spec, "hosta") == ["shuffler", "server", "hostb"]
    assert [front_of(("fronta", "frontb"), user, "shuffler") for user in range(4)] == ["fronta", "frontb"] * 2
    (tmp_path / "plain").mkdir()
    plain = load_deployment(p2b_deployment.local_copy(tmp_path / "plain", raw_baseline=False))
    assert front_of((), 3, "shuffler") == "shuffler" and linked_peers(plain, "hosta") is None
