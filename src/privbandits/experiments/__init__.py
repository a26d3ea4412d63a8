"""Experiments: specs, tasks, the results store, executors, the runner, reproductions and reports.

Config experiments (TOML files validated by typed kinds; the policy kinds are plug-ins of
:data:`~privbandits.experiments.registry.POLICY_KINDS`) step each environment's round source through the
runner's one loop with learners behind one adapter contract; every (policy, seed) pair or reproduction point
is a task keyed by the hash of its spec, computed by an executor (in process, a process pool or Ray) into
the SQLite results store; reports, the results book and the static site are rebuilt from stored rows alone.
The paper reproductions are a layer on top, :mod:`privbandits.papers` (found through an entry point, never
imported here: :mod:`~privbandits.experiments.catalog`), the audits' store units in
:mod:`~privbandits.experiments.audits`.

Names are imported on first use, so ``import privbandits.experiments.<light module>`` (the
command line's catalogue and option parsing) does not load numba, matplotlib or the protocols.
"""

from __future__ import annotations

from privbandits._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "ConfigError": "privbandits.experiments.config",
        "ExperimentConfig": "privbandits.experiments.config",
        "config_hash": "privbandits.experiments.config",
        "load_config": "privbandits.experiments.config",
        "parse_config": "privbandits.experiments.config",
        "PolicyKindConfig": "privbandits.experiments.config.kind",
        "POLICY_KINDS": "privbandits.experiments.registry",
        "SweepSummary": "privbandits.experiments.runner",
        "load_runs": "privbandits.experiments.runner",
        "pending_runs": "privbandits.experiments.runner",
        "run_experiment": "privbandits.experiments.runner",
        "run_single": "privbandits.experiments.runner",
        "series_rounds": "privbandits.experiments.runner",
        "ResultsStore": "privbandits.experiments.store",
        "RunRecord": "privbandits.experiments.store",
        "StoreError": "privbandits.experiments.store",
        "Task": "privbandits.experiments.tasks",
        "run_tasks": "privbandits.experiments.executors",
    },
)
