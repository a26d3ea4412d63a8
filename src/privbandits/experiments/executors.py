"""Compute the units a store lacks: in this process, a local process pool, or Ray.

Whatever the executor, each unit is ``Task.run()`` in some process and its result
is written by this (the driver) process, one transaction per unit, as soon as it
arrives; results do not depend on the executor or the number of workers, since
every unit is a deterministic function of its parameters.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from privbandits.experiments.store import ResultsStore, owner_id
from privbandits.experiments.tasks import Task

ExecutorName = Literal["local", "ray"]
EXECUTORS: tuple[str, ...] = ("local", "ray")
RAY_OBJECT_STORE_BYTES = 512 * 1024**2
"""Object store of a local Ray cluster started here (results are small JSON)."""
_POLL_SECONDS = 0.5


class ExecutorError(RuntimeError):
    """An executor cannot be used (e.g. Ray is not installed)."""


@dataclass
class TaskSummary:
    """What :func:`run_tasks` did: keys computed here, found stored, and waited for."""

    computed: list[str] = field(default_factory=list)
    stored: int = 0
    waited: int = 0


Progress = Callable[[Task], None]


def execute(task: Task) -> tuple[dict[str, Any], float]:
    """Worker entry: the task's result and its wall time (BLAS limited to one thread)."""
    from threadpoolctl import threadpool_limits

    start = time.perf_counter()
    with threadpool_limits(limits=1):
        result = task.run()
    return result, time.perf_counter() - start


def unique(tasks: Sequence[Task]) -> list[Task]:
    """``tasks`` without repeated keys, first occurrence kept."""
    seen: dict[str, Task] = {}
    for task in tasks:
        seen.setdefault(task.key, task)
    return list(seen.values())


def run_tasks(
    tasks: Sequence[Task],
    store: ResultsStore,
    *,
    jobs: int = 1,
    executor: str = "local",  # one of EXECUTORS (checked: callers pass what users typed)
    ray_address: str | None = None,
    force: bool = False,
    on_done: Progress | None = None,
) -> TaskSummary:
    """Compute every unit of ``tasks`` not yet in ``store`` (all of them with ``force``).

    Units another live process has claimed are left to it and waited for; if that
    process dies first, they are computed here. ``on_done(task)`` is called as each
    unit is stored (computed here or elsewhere).
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1 (got {jobs!r})")
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(map(repr, EXECUTORS))} (got {executor!r})")
    todo = unique(tasks)
    summary = TaskSummary()
    if not force:
        present = store.stored_keys(task.key for task in todo)
        summary.stored = len(present)
        todo = [task for task in todo if task.key not in present]
    owner = owner_id()
    while todo:
        claimed = [task for task in todo if store.claim(task.key, owner)]
        # stored by another process between our look and our claim: counted, not computed twice
        mine = claimed if force else _drop_finished(claimed, store, owner, summary, on_done)
        taken = {task.key for task in claimed}
        others = [task for task in todo if task.key not in taken]
        try:
            _compute(mine, store, jobs, executor, ray_address, force, summary, on_done)
        finally:
            store.release([task.key for task in mine], owner)
        todo = _wait_for_others(others, store, owner, summary, on_done)
    return summary


def _drop_finished(
    mine: list[Task], store: ResultsStore, owner: str, summary: TaskSummary, on_done: Progress | None
) -> list[Task]:
    """The claimed ``mine`` still to compute: those another process stored meanwhile are released and counted."""
    done = store.stored_keys(task.key for task in mine)
    store.release(done, owner)
    for task in mine:
        if task.key in done:
            summary.waited += 1
            if on_done:
                on_done(task)
    return [task for task in mine if task.key not in done]


def _wait_for_others(
    tasks: list[Task], store: ResultsStore, owner: str, summary: TaskSummary, on_done: Progress | None
) -> list[Task]:
    """Wait while other processes compute ``tasks``; return those whose owner died unfinished."""
    pending = list(tasks)
    while pending:
        present = store.stored_keys(task.key for task in pending)
        for task in pending:
            if task.key in present:
                summary.waited += 1
                if on_done:
                    on_done(task)
        pending = [task for task in pending if task.key not in present]
        orphans = [task for task in pending if not store.claimed_elsewhere(task.key, owner)]
        if orphans:
            return orphans
        if pending:
            time.sleep(_POLL_SECONDS)
    return []


def _compute(
    tasks: list[Task],
    store: ResultsStore,
    jobs: int,
    executor: str,
    ray_address: str | None,
    force: bool,
    summary: TaskSummary,
    on_done: Progress | None,
) -> None:
    def finish(task: Task, outcome: tuple[dict[str, Any], float]) -> None:
        store.put(task, outcome[0], outcome[1], replace=force)
        summary.computed.append(task.key)
        if on_done:
            on_done(task)

    if not tasks:
        return
    if executor == "ray":
        for task, outcome in _ray_results(tasks, jobs, ray_address):
            finish(task, outcome)
    elif jobs == 1 or len(tasks) == 1:
        for task in tasks:
            finish(task, execute(task))
    else:
        for task, outcome in _pool_results(tasks, jobs):
            finish(task, outcome)


def _pool_results(tasks: list[Task], jobs: int) -> Iterator[tuple[Task, tuple[dict[str, Any], float]]]:
    """``(task, outcome)`` as a local process pool finishes them."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(jobs, len(tasks)), mp_context=context) as pool:
        running = {pool.submit(execute, task): task for task in tasks}
        try:
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    yield running.pop(future), future.result()
        except BaseException:
            for future in running:
                future.cancel()
            raise


@contextmanager
def ray_session(jobs: int, address: str | None) -> Iterator[Any]:
    """The ``ray`` module, connected to ``address`` or to a local cluster of ``jobs`` CPUs started here."""
    try:
        import ray
    except ImportError:
        raise ExecutorError(
            "--executor ray needs Ray: install the optional extra with `make ray` (or `pip install 'privbandits[ray]'`)"
        ) from None
    started = not ray.is_initialized()
    if started:
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(
                num_cpus=jobs,
                include_dashboard=False,
                object_store_memory=RAY_OBJECT_STORE_BYTES,
                log_to_driver=False,
                configure_logging=False,
            )
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _ray_results(
    tasks: list[Task], jobs: int, address: str | None
) -> Iterator[tuple[Task, tuple[dict[str, Any], float]]]:
    """``(task, outcome)`` as Ray workers finish them (at most ``jobs`` in flight)."""
    with ray_session(jobs, address) as ray:
        remote = ray.remote(num_cpus=1)(execute)
        queue = list(tasks)
        running: dict[Any, Task] = {}  # Ray's object reference -> its task
        while queue or running:
            while queue and len(running) < jobs:
                task = queue.pop(0)
                running[remote.remote(task)] = task
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                yield running.pop(ref), ray.get(ref)
