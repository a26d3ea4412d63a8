"""The P2B shuffler's durable report queue (issues 17, 34), on both backends: no accepted report lost, no batch
released twice, identities dropped when a batch forms, bad input refused with the queue unchanged.

Every test that takes ``backend`` runs once on SQLite (a file in the test's folder) and once on PostgreSQL (a
fresh database on the session's throw-away server, ``tests/pg_server.py``; skipped, saying why, where that server
cannot start). Crashes are simulated two ways: a connection that dies inside an operation (closed at a chosen
statement, its transaction never committed) and a real process killed with SIGKILL while it accepts, batches and
releases. The PostgreSQL queue is also shared: front ends in separate processes accept into it at once, while a
batcher forms batches. Every subprocess is waited for with a timeout.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from urllib.parse import urlsplit

import numpy as np
import pytest
from report_queues import JOIN, Postgres, Sqlite, fill, rid, state, stored_reports

from privbandits.protocols.p2b.queue import ReportQueue, SqliteReportQueue
from privbandits.validation import InvalidInputError


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, tmp_path):
    if request.param == "sqlite":
        return Sqlite(tmp_path)
    return Postgres(request.getfixturevalue("postgres_server").database())


@pytest.fixture
def queue(backend):
    with backend.open(n_codes=4, n_arms=3) as opened:
        yield opened


@pytest.fixture
def sqlite_queue(tmp_path):
    with Sqlite(tmp_path).open(n_codes=4, n_arms=3) as opened:
        yield opened


def test_the_file_is_wal_with_full_sync(sqlite_queue):
    assert sqlite_queue._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    with sqlite3.connect(sqlite_queue.path) as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_postgres_commits_wait_for_the_flushed_log_whatever_the_server_default(postgres_server):
    import psycopg

    url = postgres_server.database()
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {urlsplit(url).path[1:]} SET synchronous_commit TO off")
    with Postgres(url).open(n_codes=4, n_arms=3) as queue:
        assert queue._db.execute("SHOW synchronous_commit").fetchone()[0] == "on"
    with psycopg.connect(url) as other:
        assert other.execute("SHOW synchronous_commit").fetchone()[0] == "off"  # the test can fail


def test_accept_is_idempotent_on_report_id(queue):
    assert queue.accept(rid(1), "device-1", 3, 2, 1) is True
    assert queue.accept(rid(1), "device-1", 3, 2, 1) is False  # the ack was lost; the device retries
    assert queue.held() == 1
    fill(queue, [2, 3])
    batch = queue.close_batch(0)
    assert len(batch) == 3 and batch.codes.tolist() == [3, 2, 3]
    assert queue.accept(rid(1), "device-1", 3, 2, 1) is False  # a retry after the batch formed: still once
    assert queue.held() == 0 and len(queue.batch(0)) == 3
def test_accept_many_is_one_group_each_as_accept_and_all_or_nothing(queue):
    """A group commit (the concurrent front end's): each report as accept() takes it (new: True; the same id and
    report again, in the group or from before: False); a group holding one refused report stores none of it."""
    fill(queue, [1])
    group = [(rid(n), f"device-{n}", n % 4, n % 3, n % 2) for n in (2, 1, 3, 2)]
    assert queue.accept_many(group) == [True, False, True, False]
    assert queue.held() == 3 and sorted(queue.held_senders()) == ["device-1", "device-2", "device-3"]
    before = state(queue)
    forged = [(rid(4), "device-4", 0, 1, 0), (rid(3), "device-9", 3, 0, 1)]  # the second: held for device-3
    with pytest.raises(InvalidInputError, match="is held for another sender; got it from 'device-9'"):
        queue.accept_many(forged)
    with pytest.raises(InvalidInputError, match="reward"):
        queue.accept_many([(rid(5), "device-5", 0, 0, 0), (rid(6), "device-6", 0, 0, 2)])  # refused before storing
    assert state(queue) == before and queue.accept_many([]) == []


def test_a_reused_report_id_with_another_report_or_sender_is_refused(queue):
    fill(queue, [1])
    before = state(queue)
    with pytest.raises(InvalidInputError) as error:
        queue.accept(rid(1), "device-1", 1, 1, 0)
    assert str(error.value) == (
        f"ReportQueue.accept: report_id '{rid(1)}' was already accepted with another report "
        "(code, action, reward) = (1, 1, 1), got (1, 1, 0); a retry resends the same report"
    )
    with pytest.raises(InvalidInputError) as error:
        queue.accept(rid(1), "device-9", 1, 1, 1)
    assert str(error.value) == (
        f"ReportQueue.accept: report_id '{rid(1)}' is held for another sender; got it from 'device-9' "
        "(report ids are random: a collision is a forged or copied id)"
    )
    assert state(queue) == before


def test_close_batch_is_numbered_and_idempotent(queue):
    fill(queue, range(3))
    first = queue.close_batch(0)
    fill(queue, range(3, 5))
    again = queue.close_batch(0)  # a repeated close (e.g. after a restart) forms nothing new
    assert again.codes.tolist() == first.codes.tolist() == [0, 1, 2] and queue.held() == 2
    assert not first.codes.flags.writeable
    with pytest.raises(
        InvalidInputError,
        match=r"^ReportQueue.close_batch: batch_id must be an existing batch or the next one, 1, got 2$",
    ):
        queue.close_batch(2)
    second = queue.close_batch(1)
    assert (second.codes.tolist(), second.actions.tolist(), second.rewards.tolist()) == ([3, 0], [0, 1], [1, 0])
    assert len(queue.close_batch(2)) == 0  # an empty batch is a batch
    assert queue.batches() == [0, 1, 2] == queue.unreleased()


def test_release_is_marked_once(queue):
    fill(queue, range(2))
    queue.close_batch(0)
    assert not queue.released(0) and not queue.released(1)  # 1: not formed yet
    assert queue.mark_released(0) is True
    assert queue.mark_released(0) is False  # already out: the caller must not send it again
    assert queue.released(0) and queue.unreleased() == []
    assert queue.batch(0).released and queue.close_batch(0).released


def test_identities_are_gone_once_the_batch_forms(backend, queue):
    fill(queue, range(6), sender="secret-device-{}")
    assert queue.held_senders() == [f"secret-device-{n}" for n in range(6)]
    assert {sender for sender, _ in stored_reports(backend).values()} == {f"secret-device-{n}" for n in range(6)}
    queue.close_batch(0)
    fill(queue, [6], sender="other-{}")
    assert queue.held_senders() == ["other-6"]
    assert {sender for sender, batch in stored_reports(backend).values() if batch is not None} == {None}


def test_identities_are_gone_from_the_sqlite_files_bytes(sqlite_queue):
    fill(sqlite_queue, range(6), sender="secret-device-{}")
    files = sorted(sqlite_queue.path.parent.iterdir())
    assert any(b"secret-device-" in f.read_bytes() for f in files)  # held: the identity is on disk
    sqlite_queue.close_batch(0)
    # not in the bytes either: secure_delete zeroes the old cells, the WAL is truncated at the batch
    for path in sqlite_queue.path.parent.iterdir():
        assert b"secret-device-" not in path.read_bytes(), path.name


def test_threads_accepting_at_once_are_each_counted(queue):
    def accept_range(start: int) -> None:
        fill(queue, range(start, start + 50))

    threads = [threading.Thread(target=accept_range, args=(start,)) for start in range(0, 200, 50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN)
        assert not thread.is_alive()
    assert queue.held() == 200 and len(queue.close_batch(0)) == 200


# ---------------------------------------------------------------- crashes


class SimulatedCrash(Exception):
    pass


def dies_at(queue: ReportQueue, prefix: str) -> None:
    """From now on ``queue``'s connection works until a statement starting with ``prefix``, then dies (closed,
    its transaction never committed: the server or the file rolls it back)."""
    execute = queue._execute

    def dying(sql: str, params=()):
        if sql.lstrip().startswith(prefix):
            queue._disconnect()  # the process dies here
            raise SimulatedCrash(prefix)
        return execute(sql, params)

    queue._execute = dying


def test_a_crash_inside_close_batch_loses_nothing_and_forms_no_batch(backend):
    queue = backend.open(n_codes=4, n_arms=3)
    fill(queue, range(5))
    dies_at(queue, "INSERT INTO batches")  # the held reports were taken (deleted): not committed
    with pytest.raises(SimulatedCrash):
        queue.close_batch(0)
    restarted = backend.open()  # n_codes, n_arms come from the store
    assert (restarted.n_codes, restarted.n_arms) == (4, 3)
    assert restarted.batches() == [] and restarted.held() == 5
    assert restarted.held_senders() == [f"device-{n}" for n in range(5)]
    assert restarted.close_batch(0).codes.tolist() == [0, 1, 2, 3, 0]
    restarted.close()


def test_a_crash_before_the_commit_of_an_accept_stores_nothing_unacknowledged(backend):
    queue = backend.open(n_codes=4, n_arms=3)
    fill(queue, range(3))
    queue.close_batch(0)
    assert queue.mark_released(0)
    fill(queue, [3])
    dies_at(queue, "COMMIT")
    with pytest.raises(SimulatedCrash):
        queue.accept(rid(4), "device-4", 0, 0, 0)  # never acknowledged
    restarted = backend.open()
    assert restarted.held() == 1 and restarted.held_senders() == ["device-3"]  # the acknowledged one is there
    assert restarted.accept(rid(4), "device-4", 0, 0, 0) is True  # the device's retry counts once
    assert restarted.unreleased() == [] and restarted.released(0)
    restarted.close()


CHILD = textwrap.dedent(
    """
    import sys
    from privbandits.protocols.p2b.queue import open_report_queue

    queue = open_report_queue(sys.argv[1], schema="shuffler", n_codes=4, n_arms=3)
    mode, batch_every = sys.argv[2], int(sys.argv[3])
    number = 0
    while True:
        report = f"{number:032x}"
        queue.accept(report, f"device-{number}", number % 4, number % 3, number % 2)
        print("ack", report, flush=True)  # acknowledged only once committed
        number += 1
        if mode == "hold" and number == batch_every:
            print("waiting", flush=True)
            sys.stdin.readline()  # blocks until killed
        if mode == "churn" and number % batch_every == 0:
            batch = queue.next_batch_id()
            queue.close_batch(batch)
            if queue.mark_released(batch):
                print("released", batch, flush=True)
    """
)


def run_child(where: str, mode: str, batch_every: int, stop_after: int) -> tuple[list[str], list[int]]:
    """Start the child, read its output until ``stop_after`` acks (or "waiting"), SIGKILL it; its acks and releases."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, where, mode, str(batch_every)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    acks, releases, stop = [], [], time.monotonic() + JOIN

    def take(line: str) -> str:
        word, value = (line.split() + [""])[:2]
        if word == "ack":
            acks.append(value)
        elif word == "released":
            releases.append(int(value))
        return word

    try:
        for line in child.stdout:
            if take(line) == "waiting" or len(acks) >= stop_after or time.monotonic() > stop:
                break
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(JOIN)
        for line in child.stdout.read().splitlines(keepends=True):  # what it said before it died, unread yet
            if line.endswith("\n"):
                take(line)
        child.stdout.close()
        child.stdin.close()
    assert child.returncode == -signal.SIGKILL
    return acks, releases


def test_sigkill_between_accept_and_close_batch_loses_no_report(backend):
    acks, _ = run_child(backend.where, "hold", batch_every=40, stop_after=10**6)
    assert len(acks) == 40
    with backend.open() as restarted:
        assert restarted.held() == 40 and restarted.batches() == []
        assert restarted.held_senders() == sorted(f"device-{n}" for n in range(40))
        batch = restarted.close_batch(restarted.next_batch_id())
        assert len(batch) == 40 and batch.codes.tolist() == [n % 4 for n in range(40)]


def test_sigkill_while_accepting_batching_and_releasing_loses_nothing_and_releases_nothing_twice(backend):
    acks, releases = run_child(backend.where, "churn", batch_every=7, stop_after=150)
    assert len(acks) >= 150 and releases
    with backend.open() as restarted:  # opened first: SQLite recovers a commit synced just before the kill
        stored = stored_reports(backend)
        assert set(acks) <= set(stored)  # every acknowledged report is stored (at most one more, unacknowledged)
        assert len(stored) - len(acks) in (0, 1)
        formed = restarted.batches()
        assert formed == list(range(len(formed))) and len(formed) >= len(acks) // 7 - 1
        sizes = [len(restarted.batch(b)) for b in formed]
        assert all(size == 7 for size in sizes)
        assert restarted.held() == len(stored) - 7 * len(formed)
        assert sum(sizes) + restarted.held() == len(stored)  # each report in one place
        assert all(restarted.released(b) for b in releases)  # what went out is marked
        # the restarted shuffler sends what is still unreleased, each once
        resent = [b for b in restarted.unreleased() if restarted.mark_released(b)]
        assert not set(resent) & set(releases)
        # all formed batches are now out, each once (the last may have been marked by the child just
        # before the kill, without its "released" line: marked before sending, so it is not sent again)
        assert set(formed) - set(resent) - set(releases) <= {formed[-1]}
        assert restarted.unreleased() == [] and [b for b in formed if restarted.mark_released(b)] == []
        batches_with_identities = {batch for sender, batch in stored_reports(backend).values() if sender is not None}
        assert batches_with_identities <= {None}  # only held reports keep a sender
        assert np.array_equal(restarted.batch(0).codes, [n % 4 for n in range(7)])


# ---------------------------------------------------------------- bad input


def call(method: str, *args):
    return lambda queue: getattr(queue, method)(*args)


BAD_CALLS = [
    (
        call("accept", "device-3", "device-3", 0, 0, 0),
        "ReportQueue.accept: report_id must be a string of 32 lowercase hexadecimal digits "
        "(a random id: secrets.token_hex(16)), got 'device-3'",
    ),
    (
        call("accept", rid(0xABC).upper(), "device-9", 0, 0, 0),
        "ReportQueue.accept: report_id must be a string of 32 lowercase hexadecimal digits "
        f"(a random id: secrets.token_hex(16)), got '{rid(0xABC).upper()}'",
    ),
    (
        call("accept", 9, "device-9", 0, 0, 0),
        "ReportQueue.accept: report_id must be a string of 32 lowercase hexadecimal digits "
        "(a random id: secrets.token_hex(16)), got 9",
    ),
    (
        call("accept", rid(9), "", 0, 0, 0),
        "ReportQueue.accept: sender_identity must be a non-empty printable string of at most 255 characters "
        "(the peer's certificate name), got ''",
    ),
    (
        call("accept", rid(9), None, 0, 0, 0),
        "ReportQueue.accept: sender_identity must be a non-empty printable string of at most 255 characters "
        "(the peer's certificate name), got None",
    ),
    (call("accept", rid(9), "device-9", 4, 0, 0), "ReportQueue.accept: code must be in [0, 3], got 4"),
    (call("accept", rid(9), "device-9", -1, 0, 0), "ReportQueue.accept: code must be in [0, 3], got -1"),
    (call("accept", rid(9), "device-9", True, 0, 0), "ReportQueue.accept: code must be an integer in [0, 3], got True"),
    (call("accept", rid(9), "device-9", 1.0, 0, 0), "ReportQueue.accept: code must be an integer in [0, 3], got 1.0"),
    (call("accept", rid(9), "device-9", 0, 3, 0), "ReportQueue.accept: action must be in [0, 2], got 3"),
    (
        call("accept", rid(9), "device-9", 0, 0, 2),
        "ReportQueue.accept: reward must be in [0, 1] (a binary reward), got 2",
    ),
    (
        call("accept", rid(9), "device-9", 0, 0, 0.5),
        "ReportQueue.accept: reward must be an integer in [0, 1] (a binary reward), got 0.5",
    ),
    (call("close_batch", -1), "ReportQueue.close_batch: batch_id must be >= 0, got -1"),
    (call("close_batch", 1.0), "ReportQueue.close_batch: batch_id must be an integer >= 0, got 1.0"),
    (call("close_batch", "1"), "ReportQueue.close_batch: batch_id must be an integer >= 0, got '1'"),
    (
        call("close_batch", 5),
        "ReportQueue.close_batch: batch_id must be an existing batch or the next one, 1, got 5",
    ),
    (call("mark_released", 1), "ReportQueue.mark_released: batch_id must be a formed batch, got 1"),
    (call("mark_released", None), "ReportQueue.mark_released: batch_id must be an integer >= 0, got None"),
    (call("released", True), "ReportQueue.released: batch_id must be an integer >= 0, got True"),
    (call("batch", 3), "ReportQueue.batch: batch_id must be a formed batch, got 3"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_CALLS, ids=[message for _, message in BAD_CALLS])
def test_bad_input_is_refused_with_its_message_and_the_queue_unchanged(backend, queue, bad, message):
    fill(queue, range(3))
    queue.close_batch(0)
    fill(queue, range(3, 5))
    before, stored = state(queue), backend.snapshot()
    with pytest.raises(InvalidInputError) as error:
        bad(queue)
    assert str(error.value) == message
    assert state(queue) == before and backend.snapshot() == stored


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"n_codes": 0}, "n_codes must be an integer >= 1 or None (no upper bound), got 0"),
        ({"n_arms": 2.0}, "n_arms must be an integer >= 1 or None (no upper bound), got 2.0"),
        ({"n_codes": 8}, "n_codes must be 4 (the value this queue was created with), got 8"),
    ],
)
def test_bad_construction_is_refused(backend, arguments, message):
    with backend.open(n_codes=4, n_arms=3) as queue:
        fill(queue, [1])
        owner = type(queue).__name__
    with pytest.raises(InvalidInputError) as error:
        backend.open(**arguments)
    assert str(error.value) == f"{owner}: {message}"
    with backend.open() as reopened:
        assert (reopened.n_codes, reopened.n_arms, reopened.held()) == (4, 3, 1)


def test_a_path_that_is_not_a_path_is_refused(tmp_path):
    with pytest.raises(InvalidInputError) as error:
        SqliteReportQueue(3)
    assert str(error.value) == "SqliteReportQueue: path must be a path (str or os.PathLike), got 3"


def test_a_file_that_is_not_a_queue_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a database " * 100)
    with pytest.raises(InvalidInputError, match=r"^SqliteReportQueue: path '.*notes\.txt' is not a report queue: "):
        SqliteReportQueue(path)
    assert path.read_text() == "not a database " * 100


def test_another_sqlite_file_or_a_folder_is_refused(tmp_path):
    other = tmp_path / "results.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE runs (key TEXT)")
    with pytest.raises(InvalidInputError) as error:
        SqliteReportQueue(other)
    assert str(error.value) == (
        f"SqliteReportQueue: path {str(other)!r} is not a report queue: it is a SQLite file with tables ['runs']"
    )
    with sqlite3.connect(other) as db:
        assert [name for (name,) in db.execute("SELECT name FROM sqlite_master")] == ["runs"]
    with pytest.raises(
        InvalidInputError, match=r"^SqliteReportQueue: path '.*' cannot be opened as a report queue: "
    ):
        SqliteReportQueue(tmp_path)


# ---------------------------------------------------------------- what the store keeps (issue 28)


def test_a_formed_batch_keeps_no_arrival_order(backend):
    """Rows, their storage order and the returned batch follow the reports' random ids, not their arrival."""
    rng = np.random.default_rng(3)
    ids = [rng.bytes(16).hex() for _ in range(60)]
    with backend.open(n_codes=60, n_arms=3) as queue:
        for arrival, report_id in enumerate(ids):
            queue.accept(report_id, f"device-{arrival}", arrival, arrival % 3, arrival % 2)
        batch = queue.close_batch(0)
    by_id = sorted(range(60), key=lambda arrival: ids[arrival])
    assert by_id != list(range(60))  # the test can fail: id order is not arrival order
    assert batch.report_ids == tuple(sorted(ids)) and batch.codes.tolist() == by_id
    stored = [code for (code,) in backend.rows(f"SELECT code FROM reports ORDER BY {backend.physical}")]
    assert stored == by_id


def test_the_queue_file_and_its_journal_are_the_owners_only(tmp_path):
    import stat

    path = tmp_path / "queue.sqlite"
    path.write_bytes(b"")
    os.chmod(path, 0o644)  # a file left readable by others is made the owner's
    with SqliteReportQueue(path, n_codes=4, n_arms=3) as queue:
        fill(queue, range(3))
        files = sorted(p.name for p in tmp_path.iterdir())
        assert files == ["queue.sqlite", "queue.sqlite-shm", "queue.sqlite-wal"]
        assert {stat.S_IMODE((tmp_path / name).stat().st_mode) for name in files} == {0o600}
    fresh = tmp_path / "fresh" / "queue.sqlite"
    SqliteReportQueue(fresh, n_codes=4, n_arms=3).close()
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
