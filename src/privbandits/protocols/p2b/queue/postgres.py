"""The report queue in PostgreSQL: several shuffler front ends on several hosts share one queue (issue 34).

Each front end opens a :class:`PostgresReportQueue` on the same database and schema and
accepts its devices' reports into it; one batcher (any of them, or a process of its own) forms
each batch with :meth:`~privbandits.protocols.p2b.queue.interface.ReportQueue.close_batch`.
The steps are the SQLite queue's (:mod:`~privbandits.protocols.p2b.queue.interface`: the same
SQL, the same checks); what concurrency needs is here:

* every operation is one ``READ COMMITTED`` transaction, committed with ``synchronous_commit
  = on`` (set for the session, whatever the server's default), so an accepted report is in
  the server's flushed write-ahead log before the front end acknowledges it;
* :meth:`accept` is ``INSERT ... ON CONFLICT (report_id) DO NOTHING``: two front ends given
  the same report (a device that retried elsewhere) store it once, the second waiting for the
  first's transaction;
* forming a batch takes ``LOCK TABLE batches IN SHARE ROW EXCLUSIVE MODE`` (a lock that
  conflicts with itself, so one batcher at a time, and that neither readers nor accepting
  front ends wait for), then moves the held reports with one ``DELETE ... RETURNING``: the
  reports committed before that statement's snapshot go into the batch, those committed
  after it stay held for the next, so each report is in exactly one batch. A killed batcher's
  transaction is rolled back by the server (the lock goes with it). Chosen over ``SELECT ...
  FOR UPDATE SKIP LOCKED`` (a batch must take *every* held report, not skip some) and over a
  ``SERIALIZABLE`` transaction (accepts inserting while a batch forms would abort one side,
  and every caller would need a retry loop); the table lock, unlike an advisory lock, is
  scoped to the queue's schema, so queues in other schemas never wait for it.

What the queue cannot promise here: PostgreSQL keeps a deleted row's bytes (a held report's
sender) in dead tuples until ``VACUUM`` and in its write-ahead log and backups, so the
identities are gone from every query once the batch forms, but not from the server's disk;
treat the database server as part of the trusted shuffler. The URL's password, if any, never
appears in :attr:`location`, errors or results (better: give it through ``PGPASSWORD``,
``~/.pgpass`` or a client certificate).

psycopg 3 (``pip install 'privbandits[postgres]'``) is imported only when a queue opens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from privbandits.protocols.p2b.queue.interface import SCHEMA_VERSION, ReportQueue
from privbandits.protocols.p2b.queue.sqlite import COUNTS
from privbandits.validation import Constraint, InvalidInputError, check, validate

SCHEMES = ("postgresql", "postgres")
MISSING = "the PostgreSQL report queue needs psycopg 3: pip install 'privbandits[postgres]'"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value BIGINT)",
    """CREATE TABLE IF NOT EXISTS batches (
        batch_id BIGINT PRIMARY KEY,
        size BIGINT NOT NULL,
        closed_at DOUBLE PRECISION NOT NULL,
        released_at DOUBLE PRECISION
    )""",
    # a report is held (sender kept, no batch) or batched (batch set, sender gone), never both or neither;
    # ids compare bytewise ("C"), so batches come back in the same order as from SQLite
    """CREATE TABLE IF NOT EXISTS reports (
        report_id TEXT COLLATE "C" PRIMARY KEY,
        sender TEXT,
        code BIGINT NOT NULL,
        action BIGINT,
        reward SMALLINT,
        sealed BYTEA,
        batch_id BIGINT REFERENCES batches (batch_id),
        CHECK ((batch_id IS NULL) = (sender IS NOT NULL)),
        CHECK ((sealed IS NULL) = (action IS NOT NULL AND reward IS NOT NULL))
    )""",
    "CREATE INDEX IF NOT EXISTS reports_by_batch ON reports (batch_id, report_id)",
)
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,62}")


def redact(url: str) -> str:
    """``url`` without its password (in the user part or as a ``password`` parameter), for logs and results."""
    if not has_password(url):
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, hosts = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}@{hosts}"
    query = urlencode([(key, value) for key, value in parse_qsl(parts.query) if key != "password"], safe="/,:")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def has_password(url: str) -> bool:
    """Whether ``url`` carries a password."""
    parts = urlsplit(url)
    user = parts.netloc.rpartition("@")[0]
    return ":" in user or any(key == "password" for key, _ in parse_qsl(parts.query))


def check_queue_url(url: str) -> str:
    """A deployment file's ``queue_url``: a ``postgresql://`` URL without a password (the file is copied to
    every host and into the run's folder). ValueError naming what is wrong, never the password."""
    if urlsplit(url).scheme not in SCHEMES:
        raise ValueError(f"must be a postgresql:// URL (postgresql://USER@HOST:PORT/DATABASE), got {redact(url)!r}")
    if has_password(url):
        raise ValueError(
            "must not hold a password (this file is copied to every host and beside the results): give it in "
            f"PGPASSWORD or ~/.pgpass, or use a client certificate (sslcert, sslkey), got {redact(url)!r}"
        )
    return url


class _Url(Constraint):
    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and urlsplit(value).scheme in SCHEMES

    def __str__(self) -> str:
        return "a postgresql:// URL (postgresql://USER@HOST:PORT/DATABASE, libpq's parameters after '?')"


class _SchemaName(Constraint):
    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and _SCHEMA_NAME.fullmatch(value) is not None

    def __str__(self) -> str:
        return "1 to 63 lower-case letters, digits, '_' or '-', not starting with a digit or '-'"


def _psycopg():
    try:
        import psycopg
    except ImportError:
        raise InvalidInputError(MISSING) from None
    return psycopg


class PostgresReportQueue(ReportQueue):
    """A :class:`~privbandits.protocols.p2b.queue.interface.ReportQueue` in schema ``schema`` of the PostgreSQL
    database at ``url``, shared by every front end that opens it (see module doc).

    Parameters
    ----------
    url : str
        ``postgresql://USER@HOST:PORT/DATABASE`` (libpq's parameters after ``?``, e.g. ``sslmode=verify-full``;
        a socket folder as ``host``). The database must exist; the schema and its tables are created.
    schema : str
        The queue's schema (one queue per schema; e.g. the shuffler's party name).
    n_codes, n_arms : int, optional
        As :class:`~privbandits.protocols.p2b.queue.sqlite.SqliteReportQueue`'s.
    """

    _SCHEMA = _SCHEMA
    _HOLDS_OTHER = "it holds tables"

    def __init__(
        self, url: str, *, schema: str = "p2b_queue", n_codes: int | None = None, n_arms: int | None = None
    ) -> None:
        owner = type(self).__name__
        check(url, "url", _Url(), owner)
        check(schema, "schema", _SchemaName(), owner)
        given = validate(owner, COUNTS, {"n_codes": n_codes, "n_arms": n_arms})
        psycopg = _psycopg()
        self._url, self.schema = redact(url), schema
        try:
            self._db = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            raise InvalidInputError(
                f"{owner}: url {self._url!r} cannot be opened as a report queue: {_first_line(exc)}"
            ) from None
        try:
            self._db.execute("SET synchronous_commit TO on")
            self._setup(owner, given)
        except psycopg.Error as exc:
            self._db.close()
            message = f"{owner}: {self._where()} cannot hold a report queue: {_first_line(exc)}"
            raise InvalidInputError(message) from None
        except BaseException:
            self._db.close()
            raise

    @property
    def location(self) -> str:
        return f"{self._url} (schema {self.schema})"

    def _where(self) -> str:
        return f"schema {self.schema!r} of {self._url!r}"

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._db.execute(sql.replace("?", "%s"), params)

    def _executemany(self, sql: str, rows: list[tuple]) -> None:
        with self._db.cursor() as cursor:
            cursor.executemany(sql.replace("?", "%s"), rows)

    def _begin(self) -> None:
        self._execute("BEGIN ISOLATION LEVEL READ COMMITTED")

    def _in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return not self._db.closed and self._db.info.transaction_status in (
            TransactionStatus.INTRANS,
            TransactionStatus.INERROR,
        )

    def _layout(self) -> tuple[int, set[str]]:
        # front ends opening the queue at once create it once (the lock is the transaction's)
        self._execute("SELECT pg_advisory_xact_lock(hashtext('privbandits.p2b_queue:' || ?))", (self.schema,))
        self._execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
        self._execute("SELECT set_config('search_path', ?, false)", (f'"{self.schema}"',))
        tables = {
            name
            for (name,) in self._execute("SELECT tablename FROM pg_tables WHERE schemaname = ?", (self.schema,))
        }
        version = 0
        if "settings" in tables:
            row = self._execute("SELECT value FROM settings WHERE name = 'schema_version'").fetchone()
            version = 0 if row is None else row[0]
        return version, tables

    def _store_version(self) -> None:
        self._execute(
            "INSERT INTO settings (name, value) VALUES ('schema_version', ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (SCHEMA_VERSION,),
        )

    def _lock_batches(self) -> None:
        self._execute("LOCK TABLE batches IN SHARE ROW EXCLUSIVE MODE")

    def _take_held(self) -> list[tuple]:
        # one statement: what it deletes is what it returns, even while front ends commit new reports
        return self._execute(
            "DELETE FROM reports WHERE batch_id IS NULL RETURNING report_id, code, action, reward, sealed"
        ).fetchall()

    def _disconnect(self) -> None:
        self._db.close()


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


__all__ = ["PostgresReportQueue", "check_queue_url", "redact"]
