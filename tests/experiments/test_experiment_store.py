"""The experiment model's store and executors: keys, concurrency, crashes, executors give equal rows."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mnist_idx_fixture import write_mnist_folder
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.experiments.executors import run_tasks
from privbandits.experiments.store import ResultsStore, StoreError
from privbandits.experiments.tasks import Task, file_identity

TIMING_KEYS = {"wall_time_s"}

SWEEP = """
name = "store-test"
horizon = 1500
seeds = [0, 1, 2]
[environment]
kind = "linear_gaussian"
dim = 30
n_arms = 5
[[policies]]
kind = "linucb"
label = "ucb"
[[policies]]
kind = "lints"
label = "ts"
"""


def _rows(path: Path) -> list[tuple[str, str, dict]]:
    """Every stored unit as (key, params, result without measured times), sorted by key."""
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT key, params, result FROM units ORDER BY key").fetchall()
    return [
        (key, params, {k: v for k, v in json.loads(result).items() if k not in TIMING_KEYS})
        for key, params, result in rows
    ]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "privbandits.cli", *args]


def test_a_task_key_covers_every_parameter_and_data_file_content(tmp_path):
    base = Task("builtins:dict", {"seed": 0, "horizon": 10}, "a")
    assert Task("builtins:dict", {"horizon": 10, "seed": 0}, "other label").key == base.key
    assert Task("builtins:dict", {"seed": 7, "horizon": 10}, "a").key != base.key
    assert Task("builtins:dict", {"seed": 0, "horizon": 10, "extra": None}, "a").key != base.key
    data = tmp_path / "data.csv"
    data.write_text("1,2\n")
    first = Task("builtins:dict", {"data": file_identity(data)})
    data.write_text("1,3\n")
    assert Task("builtins:dict", {"data": file_identity(data)}).key != first.key


def test_results_do_not_depend_on_the_number_of_workers(tmp_path):
    tasks = [Task("privbandits.experiments.tasks:jsonable", {"value": [i, i * 0.5]}, f"t{i}") for i in range(3)]
    with pytest.raises(TypeError):  # a task must return a dict of JSON data
        tasks[0].run()
    tasks = [Task("builtins:dict", {"x": i, "y": [i, float("inf")]}, f"t{i}") for i in range(5)]
    with ResultsStore(tmp_path / "one.sqlite") as one, ResultsStore(tmp_path / "two.sqlite") as two:
        assert len(run_tasks(tasks, one, jobs=1).computed) == 5
        assert len(run_tasks(tasks, two, jobs=2).computed) == 5
        assert one.results(tasks) == two.results(tasks)
        again = run_tasks(tasks + tasks[:2], one, jobs=2)
        assert again.computed == [] and again.stored == 5 and one.count() == 5


def test_a_unit_stored_by_another_process_between_the_look_and_the_claim_is_not_computed_again(tmp_path):
    """The race the concurrent-runs test hit under load (11 computations of 10 units): another process stores a
    unit and releases its claim after this one looked at the store but before it claims; the claim is dropped."""
    task = Task("builtins:dict", {"x": 1}, "t")
    with ResultsStore(tmp_path / "r.sqlite") as store:
        run_tasks([task], store, jobs=1)  # "the other process" stored it
        real, looks = store.stored_keys, []

        def stale_first_look(keys):  # this process's first look predates it
            looks.append(keys)
            return set() if len(looks) == 1 else real(keys)

        store.stored_keys = stale_first_look
        summary = run_tasks([task], store, jobs=1)
        assert summary.computed == [] and summary.waited == 1 and store.count() == 1


def test_a_dead_processes_claim_is_taken_over_and_a_live_one_is_respected(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_owner = f"{os.uname().nodename}:{dead.stdout.strip()}"
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.claim("k", dead_owner)
        assert store.claim("k")  # the owner died: this process takes the claim over
        assert not store.claim("k", "another-host:1")  # a live (or unknown) owner keeps it
        store.release(["k"])
        assert store.claim("k", "another-host:1")


CONCURRENT = {
    "config": (["SWEEP"], 6, "store-test-summary.csv"),
    "reproduction": (["mpc-fig6", "-o", "arm_counts=3", "-o", "runs=1", "-o", "mnist=MNIST"], 10, "mpc-fig6-paper.md"),
}
"""What each concurrent test runs: the sweep file's units, or Fig. 6's on a 120-image MNIST folder (the digits
stand-in has 1,797), and the report both processes write."""


@pytest.mark.parametrize(
    "source",
    ["config", pytest.param("reproduction", marks=pytest.mark.slow)],  # 7 to 12 s on 2 cores; the race of config's
)
def test_two_concurrent_runs_into_one_store_and_out_both_succeed_without_duplicates(tmp_path, source):
    what, units, report = CONCURRENT[source]
    if what == ["SWEEP"]:
        (tmp_path / "sweep.toml").write_text(SWEEP.replace("horizon = 1500", "horizon = 400"))
        what = [str(tmp_path / "sweep.toml")]
    else:
        what = [part.replace("MNIST", str(write_mnist_folder(tmp_path / "mnist", train=120, test=30))) for part in what]
    store, out = tmp_path / "r.sqlite", tmp_path / "out"
    command = _cli("run", *what, "--store", str(store), "--out", str(out), "--no-progress")
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outputs = [process.communicate(timeout=300) for process in (first, second)]
    assert first.returncode == 0 and second.returncode == 0, outputs
    rows = _rows(store)
    assert len(rows) == units and len({key for key, _, _ in rows}) == units
    computed = [int(out.split("computed ")[1].split(" ")[0]) for out, _ in outputs]
    assert sum(computed) == units, outputs  # no unit was computed twice
    clean = tmp_path / "clean.sqlite"
    clean_run = CliRunner().invoke(app, ["run", *what, "--store", str(clean), "--no-report", "--no-progress"])
    assert clean_run.exit_code == 0, clean_run.output
    assert _rows(clean) == rows
    assert (out / report).is_file() and not list(out.glob(".*"))


def test_kill_minus_nine_then_rerun_gives_bit_identical_rows(tmp_path):
    config = tmp_path / "sweep.toml"
    config.write_text(SWEEP.replace("horizon = 1500", "horizon = 4000"))
    store = tmp_path / "r.sqlite"
    command = _cli("run", str(config), "--store", str(store), "--no-report", "--no-progress")
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if len(_rows(store)) >= 2:
                break
        except sqlite3.OperationalError:
            pass
        time.sleep(0.05)
    process.kill()
    process.wait()
    assert 1 <= len(_rows(store)) < 6, "the sweep should be killed part-way"
    clean = tmp_path / "clean.sqlite"
    for into in (store, clean):  # the killed run's store completed, and a clean run (in this process)
        rerun = CliRunner().invoke(app, ["run", str(config), "--store", str(into), "--no-report", "--no-progress"])
        assert rerun.exit_code == 0, rerun.output
    assert _rows(store) == _rows(clean) and len(_rows(clean)) == 6


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is the optional extra: run `make ray`")
def test_ray_executor_stores_the_same_rows_as_the_local_pool(tmp_path):
    common = ["run", "vertical-fig4", "-o", "horizon=1000", "-o", "seeds=0,1", "--jobs", "2", "--no-progress"]
    local, ray = tmp_path / "local.sqlite", tmp_path / "ray.sqlite"
    subprocess.run(_cli(*common, "--store", str(local), "--out", str(tmp_path / "a")), check=True)
    subprocess.run(_cli(*common, "--executor", "ray", "--store", str(ray), "--out", str(tmp_path / "b")), check=True)
    assert _rows(local) == _rows(ray) and len(_rows(ray)) == 12


def test_a_store_opened_while_another_process_sets_it_up_retries_instead_of_refusing(tmp_path, monkeypatch):
    """Two runs starting together: while one creates the store and switches it to WAL, SQLite may answer
    the other's open "database is locked" at once, without its busy wait. Opening retries (it once said
    "is not a privbandits results store"); another error still says what is wrong."""
    import privbandits.experiments.store as store_module

    answers = {"locked": 3}

    class Busy(sqlite3.Connection):
        def execute(self, sql, *args):
            if sql == "PRAGMA journal_mode=WAL" and answers["locked"]:
                answers["locked"] -= 1
                raise sqlite3.OperationalError("database is locked")
            return super().execute(sql, *args)

    connect = sqlite3.connect
    monkeypatch.setattr(store_module.sqlite3, "connect", lambda *a, **k: connect(*a, factory=Busy, **k))
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.stored_keys() == set()
    assert answers["locked"] == 0
    (tmp_path / "junk.sqlite").write_bytes(b"not a database, long enough to be read as a header" * 4)
    with pytest.raises(StoreError, match="junk.sqlite is not a privbandits results store: file is not a database"):
        ResultsStore(tmp_path / "junk.sqlite")
