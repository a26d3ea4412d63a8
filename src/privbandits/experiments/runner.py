"""Run experiments: every (policy, seed) pair, resumably, in one or more processes.

Seeding: a run with seed s derives two independent streams from
``SeedSequence(s)``, one for the environment and one for the policy, so every
policy of an experiment faces the same contexts, θ* and noise for a given seed.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from threadpoolctl import threadpool_limits

from privbandits.comm import ROUND, SETUP, Traffic
from privbandits.experiments.config import ExperimentConfig, config_hash
from privbandits.experiments.registry import build_environment, build_policy
from privbandits.experiments.store import ResultsStore, RunRecord

ProgressCallback = Callable[[int], None]
_PROGRESS_EVERY = 250


def series_rounds(horizon: int, points: int) -> np.ndarray:
    """1-based rounds kept in a downsampled series: evenly spaced, last round included."""
    return np.unique(np.linspace(1, horizon, min(points, horizon)).round().astype(np.int64))


def _has_shared_estimate(policy) -> bool:
    """Whether the policy exposes one estimate θ̂ (or the masked θ̃) as ``theta``."""
    theta = getattr(policy, "theta", None)
    return isinstance(theta, np.ndarray) and theta.ndim == 1


def communication_summary(traffic: Traffic, rounds: int) -> dict[str, float]:
    """Totals of a protocol's traffic ledger, and per bandit round."""
    setup, per_round = traffic.total(SETUP), traffic.total(ROUND)
    return {
        "setup_bytes": setup.bytes,
        "setup_messages": setup.messages,
        "round_bytes": per_round.bytes,
        "round_messages": per_round.messages,
        "bytes_per_round": per_round.bytes / rounds,
        "messages_per_round": per_round.messages / rounds,
        "communication_rounds_per_round": traffic.rounds.get(ROUND, 0) / rounds,
    }


def run_single(
    config: ExperimentConfig,
    policy_index: int,
    seed: int,
    progress: ProgressCallback | None = None,
) -> RunRecord:
    """Run one policy of ``config`` for ``config.horizon`` rounds with ``seed``.

    Pseudo-regret per round is ``max_a E[r_a] - E[r_chosen]``; the reward is the
    realised one. ``progress`` (if given) is called with the number of rounds
    done since its last call. Protocols that talk over a network (they have a
    ``traffic`` ledger) also report what they sent.
    """
    policy_config = config.policies[policy_index]
    env_seed, policy_seed = np.random.SeedSequence(seed).spawn(2)
    env = build_environment(config.environment)
    env.reset(np.random.default_rng(env_seed))
    visible = policy_config.visible_features
    policy = build_policy(policy_config, env.n_arms, visible or env.dim, np.random.default_rng(policy_seed))

    horizon = config.horizon
    keep = series_rounds(horizon, config.series_points) - 1
    norms = np.empty(len(keep)) if _has_shared_estimate(policy) else None
    regret = np.empty(horizon)
    reward = np.empty(horizon)
    actions = np.empty(horizon, dtype=np.int64)
    start = time.perf_counter()
    # Per-round linear algebra is small: BLAS threads only add overhead and, with
    # several worker processes, oversubscribe the cores.
    kept = 0
    with threadpool_limits(limits=1):
        for t in range(horizon):
            contexts, expected = env.next_round()
            seen = contexts if visible is None else contexts[..., :visible]
            arm = policy.select(seen)
            r = env.reward(arm)
            policy.update(seen, arm, r)
            actions[t], regret[t], reward[t] = arm, expected.max() - expected[arm], r
            if norms is not None and t == keep[kept]:
                norms[kept] = np.linalg.norm(policy.theta)
                kept += 1
            if progress is not None and (t + 1) % _PROGRESS_EVERY == 0:
                progress(_PROGRESS_EVERY)
    wall = time.perf_counter() - start
    if progress is not None and horizon % _PROGRESS_EVERY:
        progress(horizon % _PROGRESS_EVERY)

    spec = config.run_spec(policy_index)
    traffic = getattr(policy, "traffic", None)
    return RunRecord(
        experiment=config.name,
        policy_index=policy_index,
        label=policy_config.display_label,
        config_hash=config_hash(spec),
        seed=seed,
        horizon=horizon,
        run_spec=spec,
        rounds=keep + 1,
        cumulative_regret=np.cumsum(regret)[keep],
        cumulative_reward=np.cumsum(reward)[keep],
        wall_time_s=wall,
        actions_digest=hashlib.sha256(actions.tobytes()).hexdigest(),
        estimate_norm=norms,
        communication=None if traffic is None else communication_summary(traffic, horizon),
    )


@dataclass
class SweepSummary:
    """What a call to :func:`run_experiment` did."""

    ran: list[RunRecord] = field(default_factory=list)
    skipped: int = 0


def pending_runs(config: ExperimentConfig, store: ResultsStore, force: bool = False) -> list[tuple[int, int]]:
    """``(policy_index, seed)`` pairs of ``config`` not yet in ``store``."""
    done = set() if force else store.finished_keys()
    hashes = [config_hash(config.run_spec(index)) for index in range(len(config.policies))]
    return [(index, seed) for index, chash in enumerate(hashes) for seed in config.seeds if (chash, seed) not in done]


@contextmanager
def _progress_bar(enabled: bool, total_rounds: int) -> Iterator[ProgressCallback | None]:
    if not enabled or total_rounds == 0:
        yield None
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("rounds"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=False) as bar:
        task = bar.add_task("running", total=total_rounds)
        yield lambda n: bar.advance(task, n)


class _QueueProgress:
    """Progress callback for a worker process: forwards round counts through a queue."""

    def __init__(self, queue) -> None:
        self.queue = queue

    def __call__(self, rounds: int) -> None:
        self.queue.put(rounds)


def run_experiment(
    config: ExperimentConfig,
    store: ResultsStore,
    *,
    jobs: int = 1,
    force: bool = False,
    show_progress: bool = True,
) -> SweepSummary:
    """Run every pending (policy, seed) pair of ``config``, saving each as it finishes.

    Runs already in ``store`` are skipped unless ``force``. With ``jobs > 1``
    runs execute in that many worker processes; results are written by this
    process only, one transaction per run.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    todo = pending_runs(config, store, force)
    summary = SweepSummary(skipped=len(config.policies) * len(config.seeds) - len(todo))

    def finish(record: RunRecord) -> None:
        store.save(record)
        summary.ran.append(record)

    with _progress_bar(show_progress, len(todo) * config.horizon) as advance:
        if jobs == 1 or len(todo) <= 1:
            for index, seed in todo:
                finish(run_single(config, index, seed, advance))
            return summary
        context = multiprocessing.get_context("spawn")
        with context.Manager() as manager, ProcessPoolExecutor(min(jobs, len(todo)), context) as pool:
            queue = manager.Queue()
            callback = _QueueProgress(queue) if advance is not None else None
            running = {pool.submit(run_single, config, index, seed, callback) for index, seed in todo}
            try:
                while running:
                    done, running = wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
                    while advance is not None and not queue.empty():
                        advance(queue.get())
                    for future in done:
                        finish(future.result())
            except BaseException:
                for future in running:
                    future.cancel()
                raise
    return summary
