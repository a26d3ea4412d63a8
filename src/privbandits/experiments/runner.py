"""Run config experiments: every (policy, seed) pair is one task of the results store.

Every stream protocol, plaintext or private, steps through the one loop of
:func:`_run`: a round source (:mod:`~privbandits.experiments.sources`) gives a
:class:`~privbandits.experiments.sources.Round`, a learner adapter
(:mod:`~privbandits.experiments.adapters`) chooses, the source scores the arm and
says whether the round counts (replay), and the learner learns. Population
experiments (P2B) have no rounds; their task runs the protocol's population
simulation and stores its summary metrics in the same store.

Seeding: a run with seed s derives two independent streams from
``SeedSequence(s)``, one for the environment and one for the policy, so every
policy of an experiment faces the same contexts, θ* and noise for a given seed
(and the private ε-greedy learner and its twin share their exploration draws).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from threadpoolctl import threadpool_limits

from privbandits.comm import ROUND, SETUP, Traffic
from privbandits.experiments.config import (
    EnvConfig,
    ExperimentConfig,
    PolicyKindConfig,
    config_hash,
    environment_from_spec,
)
from privbandits.experiments.executors import ExecutorName, run_tasks
from privbandits.experiments.registry import POLICY_KINDS
from privbandits.experiments.sources import build_source
from privbandits.experiments.store import RUN_FN, ResultsStore, RunRecord
from privbandits.experiments.tasks import Task, canonical_json

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

    Pseudo-regret per round is ``max_a E[r_a] - E[r_chosen]`` where the environment
    knows the expected rewards (not under replay); the reward is the realised one.
    ``progress`` (if given) is called with the number of rounds done since its last
    call. Protocols that talk over a network (they have a ``traffic`` ledger) also
    report what they sent; protocols' own measurements go to ``metrics``.
    """
    spec = config.run_spec(policy_index)
    return _run(spec, config.environment, config.policies[policy_index], seed, progress)


def _run(
    spec: dict[str, Any],
    environment: EnvConfig,
    policy_config: PolicyKindConfig,
    seed: int,
    progress: ProgressCallback | None,
) -> RunRecord:
    """One run of ``policy_config`` on ``environment`` as described by ``spec``: THE loop.

    Every stream protocol steps through it: the source gives a :class:`Round`, the
    learner (an adapter, :mod:`~privbandits.experiments.adapters`) picks an arm, the
    source scores it, and the learner learns when the round counts (always, except
    under replay, where only rounds whose chosen arm was logged count). Population
    environments (P2B) have no rounds: :func:`_run_population`. The learner is the policy kind's
    (:meth:`~privbandits.experiments.config.kind.PolicyKindConfig.learner`).
    """
    if environment.population:
        return _run_population(spec, environment, policy_config, seed)
    env_seed, policy_seed = np.random.SeedSequence(seed).spawn(2)
    source = build_source(environment)
    source.reset(np.random.default_rng(env_seed))
    horizon = spec["horizon"]
    learner = policy_config.learner(source, horizon, policy_seed)

    keep = series_rounds(horizon, spec["series_points"]) - 1
    norms = np.empty(len(keep)) if _has_shared_estimate(learner.policy) else None
    regret = np.zeros(horizon)
    reward = np.empty(horizon)
    actions = np.empty(horizon, dtype=np.int64)
    known_regret, matched = True, 0
    start = time.perf_counter()
    # Per-round linear algebra is small: BLAS threads only add overhead and, with
    # several worker processes, oversubscribe the cores.
    kept = 0
    with threadpool_limits(limits=1):
        for t in range(horizon):
            round_ = source.next_round()
            arm = learner.select(round_)
            r, counts = source.feedback(arm)
            if counts:
                learner.update(round_, arm, r)
                matched += 1
            actions[t], reward[t] = arm, r
            expected = round_.expected
            if expected is not None:
                regret[t] = expected.max() - expected[arm]
            else:
                known_regret = False
            if norms is not None and t == keep[kept]:
                norms[kept] = np.linalg.norm(learner.policy.theta)
                kept += 1
            if progress is not None and (t + 1) % _PROGRESS_EVERY == 0:
                progress(_PROGRESS_EVERY)
    wall = time.perf_counter() - start
    if progress is not None and horizon % _PROGRESS_EVERY:
        progress(horizon % _PROGRESS_EVERY)

    traffic = learner.traffic
    metrics = learner.metrics()
    if environment.replay:
        metrics |= {"matched": matched, "ctr": float(reward.sum() / matched) if matched else float("nan")}
    return RunRecord(
        experiment=spec["experiment"],
        policy_index=spec["policy_index"],
        label=policy_config.display_label,
        config_hash=config_hash(spec),
        seed=seed,
        horizon=horizon,
        run_spec=spec,
        rounds=keep + 1,
        cumulative_regret=np.cumsum(regret)[keep] if known_regret else np.empty(0),
        cumulative_reward=np.cumsum(reward)[keep],
        wall_time_s=wall,
        actions_digest=hashlib.sha256(actions.tobytes()).hexdigest(),
        estimate_norm=norms,
        communication=None if traffic is None else communication_summary(traffic, horizon),
        metrics=metrics or None,
    )


def _run_population(
    spec: dict[str, Any], environment: EnvConfig, policy_config: PolicyKindConfig, seed: int
) -> RunRecord:
    """One run of a population kind (P2B: :meth:`~privbandits.experiments.config.P2BPolicyConfig.population_metrics`,
    users generated from ``seed``, ``spec["horizon"]`` interactions each); the run stores its metrics."""
    start = time.perf_counter()
    metrics = policy_config.population_metrics(environment, spec["horizon"], seed)
    wall = time.perf_counter() - start
    digest = hashlib.sha256(canonical_json(metrics).encode()).hexdigest()
    empty = np.empty(0)
    return RunRecord(
        experiment=spec["experiment"],
        policy_index=spec["policy_index"],
        label=policy_config.display_label,
        config_hash=config_hash(spec),
        seed=seed,
        horizon=spec["horizon"],
        run_spec=spec,
        rounds=np.empty(0, dtype=np.int64),
        cumulative_regret=empty,
        cumulative_reward=empty,
        wall_time_s=wall,
        actions_digest=digest,
        metrics=metrics,
    )


def run_task(spec: dict[str, Any], seed: int) -> dict[str, Any]:
    """Task function of one (policy, seed) run: ``spec`` is :meth:`ExperimentConfig.run_spec`
    (data files by path and content hash; a file changed since is refused)."""
    environment = environment_from_spec(spec["environment"])
    policy = POLICY_KINDS.from_spec(spec["policy"])
    return _run(spec, environment, policy, seed, None).to_result()


def run_tasks_of(config: ExperimentConfig) -> list[Task]:
    """One task per (policy, seed) of ``config``, in policy then seed order."""
    return [
        Task(RUN_FN, {"spec": config.run_spec(index), "seed": seed}, f"{policy.display_label}, seed {seed}")
        for index, policy in enumerate(config.policies)
        for seed in config.seeds
    ]


@dataclass
class SweepSummary:
    """What a call to :func:`run_experiment` did."""

    ran: list[RunRecord] = field(default_factory=list)
    skipped: int = 0


def pending_runs(config: ExperimentConfig, store: ResultsStore, force: bool = False) -> list[tuple[int, int]]:
    """``(policy_index, seed)`` pairs of ``config`` not yet in ``store``."""
    tasks = run_tasks_of(config)
    done = set() if force else store.stored_keys(task.key for task in tasks)
    return [(t.params["spec"]["policy_index"], t.params["seed"]) for t in tasks if t.key not in done]


def load_runs(config: ExperimentConfig, store: ResultsStore) -> list[RunRecord]:
    """The stored runs of ``config`` (those not yet run are absent), in policy then seed order."""
    units = store.units(task.key for task in run_tasks_of(config))
    return [RunRecord.from_result(unit.result, unit.finished_at) for unit in units.values()]


@contextmanager
def task_progress(enabled: bool, total: int, description: str = "running") -> Iterator[Callable[[Task], None] | None]:
    """A rich progress bar over ``total`` units; yields the callback that advances it (None when off)."""
    if not enabled or total == 0:
        yield None
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("units"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[last]}"),
    )
    with Progress(*columns, transient=False) as bar:
        handle = bar.add_task(description, total=total, last="")
        yield lambda task: bar.update(handle, advance=1, last=task.label)


def run_experiment(
    config: ExperimentConfig,
    store: ResultsStore,
    *,
    jobs: int = 1,
    force: bool = False,
    show_progress: bool = True,
    executor: ExecutorName = "local",
    ray_address: str | None = None,
) -> SweepSummary:
    """Run every pending (policy, seed) pair of ``config``, saving each as it finishes.

    Runs already in ``store`` are skipped unless ``force``. With ``jobs > 1``
    runs execute in that many worker processes (or Ray workers); results are
    written by this process only, one transaction per run.
    """
    tasks = run_tasks_of(config)
    todo = len(pending_runs(config, store, force))
    with task_progress(show_progress, todo) as advance:
        done = run_tasks(
            tasks, store, jobs=jobs, executor=executor, ray_address=ray_address, force=force, on_done=advance
        )
    store.remember(config.name, config.model_dump(mode="json"))
    units = store.units(done.computed)
    ran = [RunRecord.from_result(units[key].result, units[key].finished_at) for key in done.computed]
    return SweepSummary(ran=ran, skipped=len(tasks) - len(ran))
