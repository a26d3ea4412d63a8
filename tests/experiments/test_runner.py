"""Runner and store: reproducibility, regret properties, crash-safe resume."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from privbandits.experiments import (
    ResultsStore,
    StoreError,
    parse_config,
    pending_runs,
    run_experiment,
    run_single,
    series_rounds,
)
from privbandits.experiments import runner as runner_module


def test_series_rounds_are_evenly_spaced_and_end_at_the_horizon():
    rounds = series_rounds(5000, 200)
    assert rounds[0] == 1 and rounds[-1] == 5000 and len(rounds) == 200
    assert series_rounds(10, 200).tolist() == list(range(1, 11))


def test_same_seed_gives_identical_runs_and_different_seeds_differ(config_data):
    config = parse_config(config_data)
    for index in range(len(config.policies)):
        first, again = run_single(config, index, seed=1), run_single(config, index, seed=1)
        assert first.actions_digest == again.actions_digest
        np.testing.assert_array_equal(first.cumulative_regret, again.cumulative_regret)
        np.testing.assert_array_equal(first.cumulative_reward, again.cumulative_reward)
        assert run_single(config, index, seed=2).actions_digest != first.actions_digest


def test_policies_of_one_seed_face_the_same_problem(config_data):
    """A policy whose first round is a K-way tie under 'lowest' pulls arm 0 in both configs."""
    config_data["policies"] = [{"kind": "random", "label": "r1"}, {"kind": "random", "label": "r2"}]
    config = parse_config(config_data)
    a, b = run_single(config, 0, seed=4), run_single(config, 1, seed=4)
    # same policy kind, same seed, different labels: identical randomness and problem
    np.testing.assert_array_equal(a.cumulative_regret, b.cumulative_regret)
    assert a.config_hash != b.config_hash


@pytest.fixture(scope="module")
def vertical_runs():
    """The vertical paper's synthetic problem (d=100, K=10), shortened to 3000 rounds."""
    config = parse_config(
        {
            "name": "vertical-regret",
            "horizon": 3000,
            "seeds": [0, 1, 2],
            "environment": {"kind": "linear_gaussian", "dim": 100, "n_arms": 10},
            "policies": [
                {"kind": "linucb", "label": "ucb", "alpha": 0.5},
                {"kind": "lints", "label": "ts", "v": 0.01},
                {"kind": "linucb", "label": "partial", "alpha": 0.5, "visible_features": 20},
                {"kind": "random", "label": "random"},
            ],
        }
    )
    return {
        (config.policies[i].label, seed): run_single(config, i, seed)
        for i in range(len(config.policies))
        for seed in config.seeds
    }


@pytest.mark.parametrize("label", ["ucb", "ts"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_full_information_regret_is_sublinear_and_far_below_baselines(vertical_runs, label, seed):
    run = vertical_runs[(label, seed)]
    regret = np.interp([750, 1500, 2250, 3000], run.rounds, run.cumulative_regret)
    first_quarter, last_quarter = regret[0], regret[3] - regret[2]
    assert last_quarter < 0.5 * first_quarter  # the per-round regret keeps shrinking
    assert run.final_regret < 0.25 * vertical_runs[("random", seed)].final_regret
    assert run.final_regret < 0.5 * vertical_runs[("partial", seed)].final_regret


def test_partial_learner_is_between_full_and_random(vertical_runs):
    for seed in range(3):
        partial = vertical_runs[("partial", seed)].final_regret
        assert vertical_runs[("ucb", seed)].final_regret < partial < vertical_runs[("random", seed)].final_regret


def test_store_round_trip_preserves_series_exactly(tmp_path, config_data):
    config = parse_config(config_data)
    config = config.model_copy(update={"policies": config.policies[:1], "seeds": [0]})
    record = run_single(config, 0, seed=0)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        run_experiment(config, store, show_progress=False)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        (loaded,) = store.load("tiny")
        assert store.experiments() == ["tiny"]
        assert store.stored_keys() == {task.key for task in runner_module.run_tasks_of(config)}
    np.testing.assert_array_equal(loaded.cumulative_regret, record.cumulative_regret)
    np.testing.assert_array_equal(loaded.rounds, record.rounds)
    assert (loaded.label, loaded.actions_digest, loaded.run_spec) == (
        record.label,
        record.actions_digest,
        record.run_spec,
    )


def test_vertical_protocol_runs_like_central_linucb_and_reports_its_traffic(tmp_path, config_data):
    config_data["policies"] = [
        {"kind": "linucb", "label": "central", "alpha": 0.5},
        {"kind": "vfucb", "label": "vf", "alpha": 0.5, "partition": [3, 3, 2]},
        {"kind": "random", "label": "random"},
    ]
    config = parse_config(config_data)
    central, federated, random = (run_single(config, index, seed=0) for index in range(3))
    assert federated.actions_digest == central.actions_digest
    np.testing.assert_allclose(federated.estimate_norm, central.estimate_norm, rtol=1e-12)
    assert central.communication is None and random.estimate_norm is None
    horizon, n_arms, dim = config.horizon, 4, 8
    assert federated.communication["bytes_per_round"] == 8 * 2 * n_arms * dim + 2 * 8 * (2 + n_arms)
    assert federated.communication["setup_bytes"] == 8 * dim * dim
    assert federated.communication["round_messages"] == 4 * horizon
    assert federated.communication["communication_rounds_per_round"] == 2
    with ResultsStore(tmp_path / "r.sqlite") as store:
        run_experiment(config.model_copy(update={"seeds": [0]}), store, show_progress=False)
        loaded = store.load("tiny")[1]
    np.testing.assert_array_equal(loaded.estimate_norm, federated.estimate_norm)
    assert loaded.communication == federated.communication


def test_store_rejects_foreign_files(tmp_path):
    path = tmp_path / "not-a-db.sqlite"
    path.write_text("hello, this is not SQLite" * 100)
    with pytest.raises(StoreError, match="is not a privbandits results store"):
        ResultsStore(path)


def test_store_refuses_a_newer_schema(tmp_path):
    path = tmp_path / "future.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="has schema version 99; this privbandits reads up to 2"):
        ResultsStore(path)


def test_sweep_resumes_after_a_crash_without_redoing_or_losing_runs(tmp_path, config_data, monkeypatch):
    config = parse_config(config_data)
    path = tmp_path / "results.sqlite"
    executed: list[tuple[int, int]] = []
    real_run = runner_module._run

    def crashing_run(spec, environment, policy, seed, progress):
        if len(executed) == 4:
            raise KeyboardInterrupt  # the process dies in the middle of the 5th run
        executed.append((spec["policy_index"], seed))
        return real_run(spec, environment, policy, seed, progress)

    monkeypatch.setattr(runner_module, "_run", crashing_run)
    with ResultsStore(path) as store, pytest.raises(KeyboardInterrupt):
        run_experiment(config, store, show_progress=False)
    with ResultsStore(path) as store:
        assert len(store.load("tiny")) == 4  # every finished run survived
        assert len(pending_runs(config, store)) == 2

    executed.clear()

    def counting_run(spec, environment, policy, seed, progress):
        executed.append((spec["policy_index"], seed))
        return real_run(spec, environment, policy, seed, progress)

    monkeypatch.setattr(runner_module, "_run", counting_run)
    with ResultsStore(path) as store:
        summary = run_experiment(config, store, show_progress=False)
        assert summary.skipped == 4 and executed == [(1, 1), (1, 2)]
        resumed = {(r.label, r.seed): r.actions_digest for r in store.load("tiny")}

    # identical to an uninterrupted sweep
    monkeypatch.setattr(runner_module, "_run", real_run)
    with ResultsStore(tmp_path / "clean.sqlite") as store:
        run_experiment(config, store, jobs=2, show_progress=False)
        clean = {(r.label, r.seed): r.actions_digest for r in store.load("tiny")}
    assert resumed == clean and len(clean) == 6


def test_force_reruns_everything(tmp_path, config_data):
    config = parse_config(config_data)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        run_experiment(config, store, show_progress=False)
        assert run_experiment(config, store, show_progress=False).ran == []
        forced = run_experiment(config, store, force=True, show_progress=False)
        assert len(forced.ran) == 6 and len(store.load("tiny")) == 6


def test_jobs_must_be_positive(tmp_path, config_data):
    with (
        ResultsStore(tmp_path / "r.sqlite") as store,
        pytest.raises(ValueError, match=r"jobs must be an integer >= 1 \(got 0\)"),
    ):
        run_experiment(parse_config(config_data), store, jobs=0)
