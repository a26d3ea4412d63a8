"""The P2B shuffler's durable report queue (issues 17, 34): the interface (:mod:`.interface`) and its two backends,
SQLite (:mod:`.sqlite`, one file, the embedded default) and PostgreSQL (:mod:`.postgres`, shared by several
shuffler front ends; needs the ``postgres`` extra, imported only when such a queue opens)."""

from __future__ import annotations

import os

from privbandits.protocols.p2b.queue.interface import SCHEMA_VERSION, QueuedBatch, QueueIntegrityError, ReportQueue
from privbandits.protocols.p2b.queue.postgres import SCHEMES, PostgresReportQueue, redact
from privbandits.protocols.p2b.queue.sqlite import SqliteReportQueue


def open_report_queue(
    where: str | os.PathLike, *, schema: str = "p2b_queue", n_codes: int | None = None, n_arms: int | None = None
) -> ReportQueue:
    """The queue at ``where``: schema ``schema`` of the PostgreSQL database a ``postgresql://`` URL names, else the
    SQLite file at that path."""
    if isinstance(where, str) and where.partition("://")[0] in SCHEMES:
        return PostgresReportQueue(where, schema=schema, n_codes=n_codes, n_arms=n_arms)
    return SqliteReportQueue(where, n_codes=n_codes, n_arms=n_arms)


__all__ = [
    "SCHEMA_VERSION",
    "PostgresReportQueue",
    "QueueIntegrityError",
    "QueuedBatch",
    "ReportQueue",
    "SqliteReportQueue",
    "open_report_queue",
    "redact",
]
