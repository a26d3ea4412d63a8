"""The served party's one worker thread, with group commit (:class:`GroupWorker`).

Every request reaches the role and the store through this thread, one call at a time in arrival order (so neither
needs locking). Calls that queue up while the worker is busy are run together, up to ``most`` of them, inside one
store transaction, and all answered once the transaction has committed. A call that fails keeps what it wrote before
failing, as it would with a commit of its own (e.g. a reward for an event past its deadline closes the event, then is
refused). An answer is therefore still sent only after what it acknowledges is durable, but
N concurrent requests cost one disk flush instead of N, so throughput grows with concurrency while a lone request
waits no longer than before. Before a group runs, ``prepare`` (if given) sees its calls, so the service can let the
role batch what they will send (:meth:`~privbandits.serve.decider.Decider.prepare`).

If a commit itself fails (a full or failing disk), nothing of its batch is durable, yet the role may have learnt
from it: the worker answers every call of the batch with the error and refuses every later one (503), so that the
service is restarted and rebuilds its state from what the store holds.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from privbandits.serve.role import Refused
from privbandits.serve.store import EventStore

T = TypeVar("T")
log = logging.getLogger("privbandits.serve")

_Call = tuple[Callable[..., Any], tuple[Any, ...], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]
Pending = tuple[Callable[..., Any], tuple[Any, ...]]
"""A queued call: its function and arguments."""


def _settle(settled: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    """Answer a batch's futures of one event loop (on that loop: one wake-up for the whole batch)."""
    for future, ok, value in settled:
        if future.cancelled():
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


class GroupWorker:
    """One thread running calls in arrival order, queued calls grouped into one commit (see the module docstring)."""

    def __init__(
        self, store: EventStore, most: int = 64, prepare: Callable[[list[Pending]], None] | None = None
    ) -> None:
        self.store, self.most, self.prepare = store, most, prepare
        self.broken: BaseException | None = None
        self.batches = self.calls = 0
        self._queue: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="privbandits-serve", daemon=True)
        self._thread.start()

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on the worker thread, answered after its batch committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put((function, args, loop, future))
        return await future

    def shutdown(self) -> None:
        """Finish the calls already queued, then stop the thread."""
        self._queue.put(None)
        self._thread.join()

    def _next_batch(self) -> tuple[list[_Call], bool]:
        first = self._queue.get()
        if first is None:
            return [], True
        batch = [first]
        while len(batch) < self.most:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
        return batch, False

    def _run(self) -> None:
        stop = False
        while not stop:
            batch, stop = self._next_batch()
            if batch:
                outcomes = self._run_batch(batch)
                settled: dict[asyncio.AbstractEventLoop, list] = {}
                for (ok, value), (_, _, loop, future) in zip(outcomes, batch, strict=True):
                    settled.setdefault(loop, []).append((future, ok, value))
                for loop, answers in settled.items():
                    loop.call_soon_threadsafe(_settle, answers)

    def _run_batch(self, batch: list[_Call]) -> list[tuple[bool, Any]]:
        if self.broken is not None:
            refused = Refused("server", f"the event store failed ({self.broken}); restart the service", 503)
            return [(False, refused)] * len(batch)
        outcomes: list[tuple[bool, Any]] = []
        try:
            with self.store.group():
                self._prepare(batch)
                for function, args, _, _ in batch:
                    outcomes.append(self._run_one(function, args))
        except Exception as exc:  # noqa: BLE001 - the commit failed: nothing of the batch is durable
            log.exception("the event store could not commit; refusing every request until restarted")
            self.broken = exc
            return [(False, exc)] * len(batch)
        self.batches += 1
        self.calls += len(batch)
        return outcomes

    def _prepare(self, batch: list[_Call]) -> None:
        """Show ``prepare`` the batch's calls before they run (a failure there only loses the chance to batch)."""
        if self.prepare is None or len(batch) < 2:
            return
        try:
            self.prepare([(function, args) for function, args, _, _ in batch])
        except Exception:  # noqa: BLE001 - each call then runs on its own, as it would have
            log.exception("preparing a group of calls failed; running them one by one")

    def _run_one(self, function: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
        try:
            return True, function(*args)
        except Exception as exc:  # noqa: BLE001 - handed to the caller, as an executor would
            return False, exc
