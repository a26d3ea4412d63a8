"""A policy kind from the test suite runs as the built-in ones do: no edit to ``src/`` (tests/toy_policy/).

The toy kind is registered by the test for the ``with`` block: an experiment config naming it validates (its bad
options refused in the config's one-line wording), runs through the normal runner into the results store under a
key that holds its options and what it adds, is listed and shown by the CLI; after the block it is unknown again.
Installed as an entry point, a fresh process finds it, its worker processes too.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from project_paths import ROOT, TESTS
from pydantic import BaseModel
from toy_policy import KIND, ToyCycleConfig
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.experiments import ResultsStore, load_runs, run_experiment
from privbandits.experiments.config import ConfigError, parse_config
from privbandits.experiments.registry import ENTRY_POINTS, POLICY_KINDS, PolicyKindRegistry
from privbandits.experiments.runner import run_task, run_tasks_of

ARMS, HORIZON = 3, 40
ENVIRONMENT = {"kind": "linear_gaussian", "dim": 4, "n_arms": ARMS}


def _data(*policies: dict, seeds: tuple[int, ...] = (0, 1)) -> dict:
    return {"name": "toy", "horizon": HORIZON, "seeds": list(seeds), "environment": ENVIRONMENT, "policies": policies}


def _error(data: dict) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(data, source="cfg.toml")
    return str(info.value).removeprefix("cfg.toml is invalid:\n  ")


def _cycle_digest(offset: int) -> str:
    """The runner's digest of the actions the toy plays without exploring: arms in turn from ``offset``."""
    return hashlib.sha256(((offset + np.arange(HORIZON)) % ARMS).astype(np.int64).tobytes()).hexdigest()


def test_a_registered_toy_kind_runs_through_the_runner_and_store_and_is_unknown_after(tmp_path):
    data = _data({"kind": KIND, "offset": 1}, {"kind": KIND, "label": "coins", "explore": 0.5}, {"kind": "linucb"})
    with POLICY_KINDS.extended(ToyCycleConfig):
        config = parse_config(data)
        assert isinstance(config.policies[0], ToyCycleConfig) and config.policies[0].offset == 1
        with ResultsStore(tmp_path / "results.sqlite") as store:
            summary = run_experiment(config, store, show_progress=False)
            assert len(summary.ran) == 6 and summary.skipped == 0
            assert run_experiment(config, store, show_progress=False).skipped == 6  # stored: nothing runs again
            records = {(r.label, r.seed): r for r in load_runs(config, store)}
        # the runner played the toy's own learner: the cycle from offset 1, whatever the seed
        assert records[KIND, 0].actions_digest == records[KIND, 1].actions_digest == _cycle_digest(1)
        assert records["coins", 0].actions_digest != records["coins", 1].actions_digest  # its coins: the seed's
        spec = records[KIND, 0].run_spec
        assert spec["policy"] == {"kind": KIND, "label": None, "offset": 1, "explore": 0.0}
        assert records["coins", 0].run_spec["toy_coins"] == "uniform" and "toy_coins" not in spec  # what it adds
        assert len(records["linucb", 0].cumulative_regret) > 0  # a built-in kind beside it, as ever
        # the store key holds its options: another offset is another unit
        other = parse_config(_data({"kind": KIND, "offset": 2}))
        keys = {task.key for task in run_tasks_of(config)[:2]}
        assert run_tasks_of(other)[0].key not in keys
        assert other.run_spec(0)["policy"]["offset"] == 2
        assert run_task(other.run_spec(0), 0)["actions_digest"] == _cycle_digest(2)  # a stored spec runs again
    assert KIND not in POLICY_KINDS.names()
    known = ", ".join(repr(kind) for kind in POLICY_KINDS.names())
    assert _error(data).split("\n  ")[:2] == [
        f"policies[0].kind: must be one of {known} (got {KIND!r})",
        f"policies[1].kind: must be one of {known} (got {KIND!r})",
    ]
    with pytest.raises(ValueError, match=f"Input tag '{KIND}'"):
        run_task(spec, 0)


def test_the_toy_kinds_bad_options_get_the_configs_one_line_errors():
    with POLICY_KINDS.extended(ToyCycleConfig):
        assert _error(_data({"kind": KIND, "offset": -1})) == "policies[0].offset: must be >= 0 (got -1)"
        assert _error(_data({"kind": KIND, "explore": True})) == "policies[0].explore: must be a number (got True)"
        assert _error(_data({"kind": KIND, "ofset": 1})) == (
            "policies[0].ofset: unknown key; allowed keys: label, kind, offset, explore"
        )
        assert _error(_data({"kind": KIND, "offset": 3})) == (  # its own environment rule, naming its field
            "policies[0].offset: must be < the environment's 3 arms (got 3)"
        )
        names = _error(_data({"kind": "toy_cycles"}))
        assert names.endswith(f"'shuffle_dp_linucb', {KIND!r} (got 'toy_cycles')")  # registered last, listed last


def test_the_cli_lists_and_shows_the_toy_kind_only_while_it_is_registered(monkeypatch):
    from privbandits import cli

    monkeypatch.setattr(cli.console, "_width", 250)  # restored to None (the terminal's) afterwards
    with POLICY_KINDS.extended(ToyCycleConfig):
        listed = CliRunner().invoke(app, ["list"])
        shown = CliRunner().invoke(app, ["show", KIND])
    assert listed.exit_code == 0 and KIND in listed.output and "offset, explore" in listed.output
    assert shown.exit_code == 0 and "probability of a uniform arm instead" in shown.output
    assert KIND not in CliRunner().invoke(app, ["list"]).output


def test_the_registry_refuses_a_taken_kind_a_model_without_a_kind_and_an_unknown_kind():
    with pytest.raises(ValueError, match="policy kind 'linucb' is already registered"):
        POLICY_KINDS.register(POLICY_KINDS.by_kind()["linucb"])

    class Untagged(BaseModel):
        offset: int = 0

    with pytest.raises(TypeError, match="Untagged is no policy kind: it needs a field kind: Literal"):
        POLICY_KINDS.register(Untagged)
    with pytest.raises(KeyError, match="no policy kind 'toy_cycle' is registered"):
        POLICY_KINDS.unregister(KIND)
    with POLICY_KINDS.extended(ToyCycleConfig), pytest.raises(ValueError, match="'toy_cycle' is already registered"):
        POLICY_KINDS.register(ToyCycleConfig)
    assert KIND not in POLICY_KINDS.names()  # the block's kind is forgotten, even when the block fails


def _installed(tmp_path) -> Path:
    """A site folder holding a package that declares the toy kind as an entry point (its ``.dist-info`` alone)."""
    site = tmp_path / "site" / "toy_policy-0.1.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-policy\nVersion: 0.1\n")
    (site / "entry_points.txt").write_text(f"[{ENTRY_POINTS}]\n{KIND} = toy_policy:ToyCycleConfig\n")
    return site.parent


def test_an_installed_toy_kind_is_found_at_the_first_unknown_kind(tmp_path, monkeypatch):
    """The registry finds a kind an installed package declares (here in a registry of its own, in this process; the
    slow test below runs it in a fresh process and its workers)."""
    monkeypatch.syspath_prepend(str(_installed(tmp_path)))
    registry = PolicyKindRegistry(None, ENTRY_POINTS)
    assert registry.model(KIND) is ToyCycleConfig and registry.names() == (KIND,)
    assert registry.validate({"kind": KIND, "offset": 2}) == ToyCycleConfig(kind=KIND, offset=2)


@pytest.mark.slow  # 7 to 12 s on 2 cores: three fresh interpreters, a run and its report
def test_an_installed_toy_kind_is_found_by_a_fresh_process_and_its_workers(tmp_path):
    """A package declaring the kind as an entry point: ``privbandits run`` on a config naming it runs it with two
    worker processes (each finds the kind at its first unknown name) and writes its report."""
    site = _installed(tmp_path)
    config = tmp_path / "toy.toml"
    config.write_text(
        f'name = "toy"\nhorizon = {HORIZON}\nseeds = [0, 1]\n[environment]\nkind = "linear_gaussian"\n'
        f'dim = 4\nn_arms = {ARMS}\n[[policies]]\nkind = "{KIND}"\noffset = 2\n'
    )
    paths = [str(site), str(TESTS), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "COLUMNS": "200"}
    store, out = tmp_path / "results.sqlite", tmp_path / "out"
    command = [sys.executable, "-m", "privbandits", "run", str(config), "--store", str(store), "--out", str(out)]
    done = subprocess.run([*command, "--jobs", "2", "--no-progress"], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "computed 2 unit(s)" in done.stdout and (out / "toy-summary.csv").is_file()
    with POLICY_KINDS.extended(ToyCycleConfig), ResultsStore(store) as results:
        records = load_runs(parse_config(_data({"kind": KIND, "offset": 2})), results)
    assert [record.actions_digest for record in records] == [_cycle_digest(2)] * 2


def test_no_module_of_the_library_names_the_toy_kind():
    found = subprocess.run(["grep", "-rIl", "-e", "toy_cycle", "-e", "toy_policy", str(ROOT / "src")],
                           capture_output=True, text=True)  # fmt: skip
    assert found.returncode == 1 and found.stdout == ""  # grep: 1 = no match (2 would be an error)
