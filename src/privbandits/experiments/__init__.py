"""Experiments: config schema, runner, results store, reports."""

from privbandits.experiments.config import ConfigError, ExperimentConfig, config_hash, load_config, parse_config
from privbandits.experiments.runner import SweepSummary, pending_runs, run_experiment, run_single, series_rounds
from privbandits.experiments.store import ResultsStore, RunRecord, StoreError

__all__ = [
    "ConfigError",
    "ExperimentConfig",
    "ResultsStore",
    "RunRecord",
    "StoreError",
    "SweepSummary",
    "config_hash",
    "load_config",
    "parse_config",
    "pending_runs",
    "run_experiment",
    "run_single",
    "series_rounds",
]
