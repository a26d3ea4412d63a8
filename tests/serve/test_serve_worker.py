"""Group commit: requests that queue up share one commit and are answered after it; a failed commit refuses the
batch and everything after it (503) until the service is restarted."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import numpy as np
import pytest
from conftest import Clock, learner, open_service

from privbandits.serve.decider import DecideInput
from privbandits.serve.role import Refused
from privbandits.serve.store import EventStore

ROWS = np.asarray([[0.5, 0.1], [0.2, 0.9], [0.3, 0.3]])


def _committed(path) -> int:
    """Events another connection sees: what is durable."""
    with sqlite3.connect(path) as other:
        return other.execute("SELECT count(*) FROM events").fetchone()[0]


def test_queued_requests_share_one_commit_and_are_answered_after_it(tmp_path) -> None:
    path = tmp_path / "s.sqlite"
    service = open_service(path, learner(), Clock())
    release = threading.Event()

    async def main() -> list:
        busy = asyncio.ensure_future(service.call(release.wait, 30))  # holds the worker while the others queue
        await asyncio.sleep(0.05)
        asks = [service.call(service.decide, DecideInput(f"e{i}", "u", ROWS)) for i in range(20)]
        tasks = [asyncio.ensure_future(ask) for ask in asks]
        await asyncio.sleep(0.2)
        assert _committed(path) == 0 and not any(task.done() for task in tasks)
        release.set()
        await busy
        return await asyncio.gather(*tasks)

    events = asyncio.run(main())
    assert [event.event_id for event in events] == [f"e{i}" for i in range(20)]
    assert _committed(path) == 20
    assert service.commits == (2, 21)  # the waiting call, then the 20 together
    metrics = service.metrics.render().decode()
    assert "privbandits_serve_commit_groups 2.0" in metrics and "privbandits_serve_grouped_calls 21.0" in metrics
    service.close()


class _FailingCommits:
    """The store's connection, whose COMMIT fails (a full disk) once ``failing`` is set."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db, self.failing = db, False

    def execute(self, sql: str, *args):
        if self.failing and sql == "COMMIT":
            self.db.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str):
        return getattr(self.db, name)


def test_a_failed_commit_refuses_its_batch_and_every_later_request(tmp_path) -> None:
    path = tmp_path / "s.sqlite"
    service = open_service(path, learner(), Clock())
    store: EventStore = service.store
    store._db = failing = _FailingCommits(store._db)  # type: ignore[assignment]

    async def ask(event_id: str):
        return await service.call(service.decide, DecideInput(event_id, "u", ROWS))

    assert asyncio.run(ask("kept")).event_id == "kept"
    failing.failing = True
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        asyncio.run(ask("lost"))
    failing.failing = False
    with pytest.raises(Refused) as refused:
        asyncio.run(ask("after"))
    assert refused.value.status == 503 and "restart the service" in refused.value.message
    assert _committed(path) == 1
    store._db = failing.db  # type: ignore[assignment]
    service.close()
