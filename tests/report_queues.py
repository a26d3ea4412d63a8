"""The P2B shuffler's report queue on each backend, for its tests (one process, and several front ends at once):
how a test opens it, fills it, reads its stored rows and its state.

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from privbandits.protocols.p2b.queue import PostgresReportQueue, ReportQueue, SqliteReportQueue

JOIN = 30.0
SCHEMA = "shuffler"


def rid(number: int) -> str:
    """A deterministic report id of the required form (32 hex digits)."""
    return f"{number:032x}"


def fill(queue: ReportQueue, numbers, sender: str = "device-{}") -> None:
    for number in numbers:
        assert queue.accept(rid(number), sender.format(number), number % 4, number % 3, number % 2) is True


def state(queue: ReportQueue) -> tuple:
    """Everything the queue answers, for "unchanged" checks."""
    batches = [queue.batch(b) for b in queue.batches()]
    contents = [(b.batch_id, b.codes.tolist(), b.actions.tolist(), b.rewards.tolist(), b.released) for b in batches]
    return queue.held(), queue.held_senders(), queue.next_batch_id(), queue.unreleased(), contents


class Sqlite:
    """The SQLite queue of a test: one file in its folder."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "shuffler" / "queue.sqlite"
        self.where = str(self.path)

    def open(self, **counts) -> ReportQueue:
        return SqliteReportQueue(self.path, **counts)

    def rows(self, sql: str) -> list[tuple]:
        """``sql`` run by a separate connection, straight on the stored tables."""
        with sqlite3.connect(self.path) as db:
            return db.execute(sql).fetchall()

    def snapshot(self) -> dict:
        """The files' bytes (the shared-memory index aside)."""
        return {p.name: p.read_bytes() for p in self.path.parent.iterdir() if p.suffix != ".sqlite-shm"}

    physical = "rowid"
    """The order rows lie in the file."""


class Postgres:
    """The PostgreSQL queue of a test: schema ``shuffler`` of a fresh database."""

    def __init__(self, url: str) -> None:
        self.where = self.url = url

    def open(self, **counts) -> ReportQueue:
        return PostgresReportQueue(self.url, schema=SCHEMA, **counts)

    def rows(self, sql: str) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as db:
            db.execute(f'SET search_path TO "{SCHEMA}"')
            return db.execute(sql).fetchall()

    def snapshot(self) -> list:
        return [self.rows(f"SELECT * FROM {table} ORDER BY 1") for table in ("settings", "batches", "reports")]

    physical = "ctid"


def stored_reports(backend) -> dict[str, tuple]:
    """report id -> (sender, batch) read straight from the store, by a separate connection."""
    return {r: (s, b) for r, s, b in backend.rows("SELECT report_id, sender, batch_id FROM reports")}
