"""The PostgreSQL report queue shared by several shuffler front ends (issue 34): front ends in separate processes
accepting at once give the batches one front end gives; a batcher forming batches while they accept puts each
report in exactly one batch; racing batchers and releasers form and release each batch once; a batcher killed
inside its transaction loses nothing. Also what the backend refuses, and that a password never shows.

The server is the session's throw-away one (``tests/pg_server.py``); these tests skip, saying why, where it
cannot start. Every subprocess is waited for with a timeout.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from pg_server import psycopg_missing
from report_queues import JOIN, SCHEMA, Postgres, fill, rid, stored_reports

from privbandits.protocols.p2b.queue import PostgresReportQueue
from privbandits.protocols.p2b.queue.postgres import MISSING, check_queue_url, redact
from privbandits.validation import InvalidInputError

N = 600
"""Reports in the shared-queue tests: n % 3 == 0 reach front end A, 2 reach B, 1 reach both (a device that retried
at the other front end after a lost acknowledgement)."""
FRONT_ENDS = {"a": (0, 1), "b": (1, 2)}


def report(number: int) -> tuple[str, str, int, int, int]:
    """Report ``number``: a random-looking id (so id order is not arrival order), its device and its tuple."""
    report_id = hashlib.blake2b(str(number).encode(), digest_size=16).hexdigest()
    return report_id, f"device-{number}", number % 8, number % 3, number % 2


FRONT_END = textwrap.dedent(
    """
    import hashlib, sys
    from privbandits.protocols.p2b.queue import PostgresReportQueue

    url, schema, residues = sys.argv[1], sys.argv[2], {int(r) for r in sys.argv[3].split(",")}
    queue = PostgresReportQueue(url, schema=schema, n_codes=8, n_arms=3)
    print("ready", flush=True)
    sys.stdin.readline()  # every front end starts at once
    new = 0
    for number in range(int(sys.argv[4])):
        if number % 3 in residues:
            report_id = hashlib.blake2b(str(number).encode(), digest_size=16).hexdigest()
            new += queue.accept(report_id, f"device-{number}", number % 8, number % 3, number % 2)
    print("new", new, flush=True)
    """
)


def front_ends(url: str, schema: str) -> list[subprocess.Popen]:
    """Front ends A and B, each its own process and connection, started together once both are ready."""
    children = [
        subprocess.Popen([sys.executable, "-c", FRONT_END, url, schema, ",".join(map(str, residues)), str(N)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
        for residues in FRONT_ENDS.values()
    ]
    for child in children:
        assert child.stdout.readline().split() == ["ready"]
    for child in children:
        child.stdin.write("go\n")
        child.stdin.flush()
    return children


def finish(children: list[subprocess.Popen]) -> list[int]:
    """Each front end's count of new reports, once it exited."""
    counts = []
    for child in children:
        out, _ = child.communicate(timeout=JOIN)
        assert child.returncode == 0
        counts.append(int(out.split()[-1]))
    return counts


@pytest.fixture
def url(postgres_server):
    return postgres_server.database()


def test_two_front_ends_accepting_at_once_give_the_batch_of_one_front_end(url):
    with PostgresReportQueue(url, schema="one", n_codes=8, n_arms=3) as one:
        for number in range(N):
            assert one.accept(*report(number)) is True
        alone = one.close_batch(0)
    children = front_ends(url, "two")
    counts = finish(children)
    assert sum(counts) == N and all(counts)  # each report new exactly once, however the retries interleaved
    with PostgresReportQueue(url, schema="two") as two:
        assert two.held() == N and two.held_senders() == sorted(f"device-{n}" for n in range(N))
        shared = two.close_batch(0)
    assert shared.report_ids == alone.report_ids == tuple(sorted(report(n)[0] for n in range(N)))
    for field in ("codes", "actions", "rewards"):
        assert np.array_equal(getattr(shared, field), getattr(alone, field)), field


def test_a_batcher_forming_batches_while_front_ends_accept_puts_each_report_in_one_batch(url):
    with PostgresReportQueue(url, schema=SCHEMA, n_codes=8, n_arms=3) as batcher:
        children = front_ends(url, SCHEMA)
        while any(child.poll() is None for child in children):
            batcher.close_batch(batcher.next_batch_id())
            time.sleep(0.02)
        assert sum(finish(children)) == N
        batcher.close_batch(batcher.next_batch_id())  # the reports accepted after the last one
        batches = [batcher.batch(b) for b in batcher.batches()]
        assert batcher.held() == 0 and batcher.held_senders() == []
    assert sum(len(batch) > 0 for batch in batches) >= 3  # the batches did form while the front ends accepted
    ids = [report_id for batch in batches for report_id in batch.report_ids]
    assert len(ids) == len(set(ids)) == N and set(ids) == {report(n)[0] for n in range(N)}
    expected = {report(n)[0]: report(n)[2:] for n in range(N)}
    for batch in batches:
        assert list(batch.report_ids) == sorted(batch.report_ids)
        rows = zip(batch.report_ids, batch.codes.tolist(), batch.actions.tolist(), batch.rewards.tolist(), strict=True)
        assert all(expected[row[0]] == tuple(row[1:]) for row in rows)


def race(queues: list[PostgresReportQueue], call) -> list:
    """``call(queue)`` on every queue at once, each from its own thread (its own connection); the results."""
    results, barrier = [None] * len(queues), threading.Barrier(len(queues))

    def run(index: int) -> None:
        barrier.wait(JOIN)
        results[index] = call(queues[index])

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(queues))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN)
        assert not thread.is_alive()
    return results


def test_racing_batchers_form_each_batch_once_and_racing_releasers_release_it_once(url):
    queues = [PostgresReportQueue(url, schema=SCHEMA, n_codes=4, n_arms=3) for _ in range(4)]
    try:
        for batch_id in range(3):
            numbers = range(10 * batch_id, 10 * batch_id + 10)
            fill(queues[0], numbers)
            formed = race(queues, lambda queue, b=batch_id: queue.close_batch(b))
            assert {batch.report_ids for batch in formed} == {tuple(rid(n) for n in numbers)}
            marked = race(queues, lambda queue, b=batch_id: queue.mark_released(b))
            assert sorted(marked) == [False, False, False, True]
        assert queues[1].batches() == [0, 1, 2] and queues[2].unreleased() == []
    finally:
        for queue in queues:
            queue.close()


KILLED_BATCHER = textwrap.dedent(
    """
    import sys
    from privbandits.protocols.p2b.queue import PostgresReportQueue

    queue = PostgresReportQueue(sys.argv[1], schema=sys.argv[2])
    print("batching", flush=True)
    queue.close_batch(0)
    print("formed", flush=True)
    """
)


def test_a_batcher_killed_inside_its_transaction_loses_nothing_and_blocks_no_one_after(url):
    """The batcher is SIGKILLed while its DELETE of the held reports waits on a row another session locked: its
    transaction has taken the batch lock and deleted reports. The server rolls it back; a restarted batcher forms
    the batch of every report, and front ends accept meanwhile."""
    import psycopg

    backend = Postgres(url)
    with backend.open(n_codes=4, n_arms=3) as queue:
        fill(queue, range(50))
    with psycopg.connect(url) as blocker:  # one transaction: a row lock on the last held report
        blocker.execute(f'SELECT 1 FROM "{SCHEMA}".reports WHERE report_id = %s FOR UPDATE', (rid(49),))
        child = subprocess.Popen([sys.executable, "-c", KILLED_BATCHER, url, SCHEMA], stdout=subprocess.PIPE,
                                 text=True)  # fmt: skip
        try:
            assert child.stdout.readline().split() == ["batching"]
            waiting, stop = [], time.monotonic() + JOIN
            while not waiting and time.monotonic() < stop:
                time.sleep(0.02)
                waiting = backend.rows(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM%'"
                )
            assert waiting, "the batcher never reached its DELETE"
            with backend.open() as front_end:  # accepting goes on while a batch forms
                fill(front_end, [50])
                assert front_end.held() == 51  # the batcher's deletes are not committed
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(JOIN)
            child.stdout.close()
        blocker.rollback()
    with backend.open() as restarted:
        assert restarted.batches() == [] and restarted.held() == 51
        batch = restarted.close_batch(0)  # waits, if need be, for the server to end the killed batcher's transaction
        assert batch.report_ids == tuple(rid(n) for n in range(51)) and restarted.held_senders() == []
    assert {sender for sender, _ in stored_reports(backend).values()} == {None}


# ---------------------------------------------------------------- refusals, and no password anywhere


def test_without_psycopg_the_queue_refuses_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    with pytest.raises(InvalidInputError) as error:
        PostgresReportQueue("postgresql://shuffler@db.example/p2b")
    assert str(error.value) == MISSING == (
        "the PostgreSQL report queue needs psycopg 3: pip install 'privbandits[postgres]'"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"url": "/var/lib/queue.sqlite"}, "url must be a postgresql:// URL (postgresql://USER@HOST:PORT/DATABASE, "
         "libpq's parameters after '?'), got '/var/lib/queue.sqlite'"),
        ({"url": 5}, "url must be a postgresql:// URL (postgresql://USER@HOST:PORT/DATABASE, libpq's parameters "
         "after '?'), got 5"),
        ({"schema": "Shuffler"}, "schema must be 1 to 63 lower-case letters, digits, '_' or '-', not starting with "
         "a digit or '-', got 'Shuffler'"),
        ({"schema": "a" * 64}, "schema must be 1 to 63 lower-case letters, digits, '_' or '-', not starting with a "
         f"digit or '-', got '{'a' * 64}'"),
        ({"n_codes": -1}, "n_codes must be an integer >= 1 or None (no upper bound), got -1"),
    ],
)  # fmt: skip
def test_bad_arguments_are_refused_before_connecting(arguments, message):
    with pytest.raises(InvalidInputError) as error:
        PostgresReportQueue(**{"url": "postgresql://nobody@/none?host=/nonexistent", **arguments})
    assert str(error.value) == f"PostgresReportQueue: {message}"


def test_an_unreachable_server_is_named_without_the_password():
    if psycopg_missing() is not None:
        pytest.skip(psycopg_missing())
    url = "postgresql://shuffler:hunter2@/p2b?host=/nonexistent&password=hunter2&connect_timeout=2"
    with pytest.raises(InvalidInputError) as error:
        PostgresReportQueue(url)
    message = str(error.value)
    assert message.startswith(
        "PostgresReportQueue: url 'postgresql://shuffler@/p2b?host=/nonexistent&connect_timeout=2' cannot be "
        "opened as a report queue: "
    )
    assert "hunter2" not in message and "\n" not in message


def test_a_schema_holding_other_tables_is_refused_and_left_alone(url):
    backend = Postgres(url)
    with backend.open(n_codes=4, n_arms=3):
        pass
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f'CREATE TABLE "{SCHEMA}".runs (key TEXT)')
    with pytest.raises(InvalidInputError) as error:
        backend.open()
    assert str(error.value) == (
        f"PostgresReportQueue: schema 'shuffler' of {url!r} is not a report queue: it holds tables "
        "['batches', 'reports', 'runs', 'settings']"
    )
    assert backend.rows("SELECT count(*) FROM runs") == [(0,)]


def test_the_location_and_the_repr_hold_no_password(url):
    with PostgresReportQueue(url.replace("postgres@", "postgres:hunter2@"), schema="q") as queue:
        assert queue.location == f"{url} (schema q)" and "hunter2" not in repr(queue)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://shuffler@db/p2b", "must be a postgresql:// URL (postgresql://USER@HOST:PORT/DATABASE), got "
         "'mysql://shuffler@db/p2b'"),
        ("postgresql://shuffler:hunter2@db/p2b", "must not hold a password (this file is copied to every host and "
         "beside the results): give it in PGPASSWORD or ~/.pgpass, or use a client certificate (sslcert, sslkey), "
         "got 'postgresql://shuffler@db/p2b'"),
        ("postgresql://shuffler@db/p2b?password=hunter2&sslmode=require", "must not hold a password (this file is "
         "copied to every host and beside the results): give it in PGPASSWORD or ~/.pgpass, or use a client "
         "certificate (sslcert, sslkey), got 'postgresql://shuffler@db/p2b?sslmode=require'"),
    ],
)  # fmt: skip
def test_a_deployment_url_is_checked_without_showing_its_password(url, message):
    with pytest.raises(ValueError) as error:
        check_queue_url(url)
    assert str(error.value) == message
    assert check_queue_url("postgresql://shuffler@db:5433/p2b?sslmode=verify-full") == (
        "postgresql://shuffler@db:5433/p2b?sslmode=verify-full"
    )
    assert redact("postgresql://a:b@h1,h2/db") == "postgresql://a@h1,h2/db"


# ---------------------------------------------------------------- where no server can start, the tests say why


def test_the_skip_reasons_name_what_is_missing(monkeypatch):
    import pg_server

    monkeypatch.setattr(pg_server, "psycopg_missing", lambda: None)
    monkeypatch.setattr(pg_server.shutil, "which", lambda name: None)
    monkeypatch.setattr(pg_server.glob, "glob", lambda pattern: [])
    assert pg_server.unavailable() == (
        "PostgreSQL queue tests need initdb and pg_ctl (Debian's postgresql package): neither on PATH nor in "
        "/usr/lib/postgresql/*/bin"
    )
    monkeypatch.setattr(pg_server, "binaries", lambda: ("/bin/false", "/bin/false"))
    monkeypatch.setattr(pg_server.os, "geteuid", lambda: 0)
    monkeypatch.setattr(pg_server.pwd, "getpwnam", lambda name: (_ for _ in ()).throw(KeyError(name)))
    assert pg_server.unavailable() == (
        "PostgreSQL queue tests run as root, which PostgreSQL refuses: there is no 'postgres' user to run it as"
    )


def test_a_server_that_does_not_start_says_why(monkeypatch):
    import pg_server

    monkeypatch.setattr(pg_server, "binaries", lambda: ("/bin/false", "/bin/false"))
    monkeypatch.setattr(pg_server.os, "geteuid", lambda: 12345)  # not root: runs as this user
    monkeypatch.setattr(pg_server.os, "chown", lambda *args: None)
    me = pg_server.pwd.getpwuid(os.getuid())
    monkeypatch.setattr(pg_server.pwd, "getpwuid", lambda uid: me)
    with pytest.raises(RuntimeError) as error:
        pg_server.PostgresServer.start()
    assert str(error.value) == "the throw-away PostgreSQL server did not start: false exited 1: "
