"""Every command refuses cleanly (issue 45): each bad input a new user tried is one line naming the input, the
allowed values and the value given, exit code 2, before any work is done (no deployment here is run)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bad_input import read_only, refused
from project_paths import ROOT
from typer.testing import CliRunner

from privbandits.cli import app
from privbandits.deploy.deployment import DeploymentError, load_deployment

SHIPPED = ROOT / "configs" / "deploy"
DEPLOY_COMMANDS = [["deploy", "certs"], ["deploy", "data"], ["deploy", "hosts"], ["deploy", "load"],
                   ["deploy", "local"], ["party", "run", "--as", "active"]]  # fmt: skip


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder with the shipped deployment files, a folder named like one and a binary file named like one."""
    shutil.copytree(SHIPPED, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("certs", "data", "out"))
    (tmp_path / "folder.toml").mkdir()
    (tmp_path / "binary.toml").write_bytes(b"\x00\xff\xfe\x00 not text")
    return tmp_path


def exactly(folder: Path, args: list[str], message: str) -> None:
    """``privbandits ARGS`` in ``folder`` prints exactly ``error: MESSAGE``, exits 2 and writes nothing."""
    assert refused(folder, args, message) == f"error: {message}"


def edited(folder: Path, shipped: str, **values: str) -> Path:
    """The shipped deployment file ``shipped`` in ``folder`` with each ``KEY = ...`` line set to ``KEY = VALUE``."""
    path = folder / shipped
    text = path.read_text()
    for key, value in values.items():
        text, found = re.subn(rf"(?m)^{key} = [^#\n]*", f"{key} = {value} ", text, count=1)
        assert found, key
    path.write_text(text)
    return path


# -------------------------------------------------------------- the deployment file itself


@pytest.mark.parametrize("command", DEPLOY_COMMANDS, ids=" ".join)
def test_a_deployment_path_that_is_a_folder_or_binary_is_one_line(work, command):
    binary = "deployment file binary.toml is not a TOML file: byte 1 is not UTF-8 text (invalid start byte)"
    folder = "deployment file folder.toml is a folder; give the deployment file (TOML)"
    exactly(work, [*command, "folder.toml"], folder)
    exactly(work, [*command, "binary.toml"], binary)


def test_loading_a_deployment_path_that_is_a_folder_or_binary_names_it(work):
    """load_deployment, not only the command line (which finds a folder before it reads the file)."""
    binary = "is not a TOML file: byte 1 is not UTF-8 text (invalid start byte)"
    for name, why in (("folder.toml", "is a folder, not a TOML file"), ("binary.toml", binary)):
        with pytest.raises(DeploymentError) as caught:
            load_deployment(work / name)
        assert str(caught.value) == f"deployment file {work / name} {why}"


STRICT = [
    ({"rounds": '"500"'}, "protocol.rounds: Input should be a valid integer, got '500'"),
    ({"deadline_s": '"30"'}, "deadline_s: Input should be a valid number, got '30'"),
    ({"secure_aggregation": '"no"'}, "protocol.secure_aggregation: Input should be a valid boolean, got 'no'"),
    ({"alpha": "inf"}, "protocol.alpha: Input should be a finite number, got inf"),
    ({"alpha": "nan"}, "protocol.alpha: Input should be a finite number, got nan"),
    ({"seed": "0.0"}, "protocol.seed: Input should be a valid integer, got 0.0"),
    ({"checkpoint_every": "true"}, "checkpoint_every: Input should be a valid integer, got True"),
    ({"output": "5"}, "output: Input should be a path (a string), got 5"),
]


@pytest.mark.parametrize(("values", "message"), STRICT, ids=lambda v: str(v)[:30])
def test_a_deployment_file_converts_nothing_and_refuses_inf_and_nan_when_it_loads(work, values, message):
    """Strict types and finite floats, as an experiment config (the one base, privbandits.strict): a privacy switch
    written as a string, or an infinite alpha, is refused when the file loads, not after every party started."""
    path = edited(work, "vertical-vfucb.toml", **values)
    with pytest.raises(DeploymentError) as caught:
        load_deployment(path)
    assert str(caught.value) == f"{path}: {message}"
    exactly(work, ["deploy", "local", path.name], f"{path.name}: {message}")


def test_integers_are_numbers_and_paths_are_strings_in_a_strict_deployment_file(work):
    path = edited(work, "vertical-vfucb.toml", deadline_s="30", alpha="1", output='"results/here"')
    spec = load_deployment(path)
    assert (spec.deadline_s, spec.protocol.alpha, spec.output) == (30.0, 1.0, work / "results" / "here")
    assert isinstance(spec.deadline_s, float) and isinstance(spec.protocol.alpha, float)
    assert spec.parties["active"].data == work / "data" / "active.npz"


@pytest.mark.parametrize("shipped", sorted(path.name for path in SHIPPED.glob("*.toml")))
def test_every_shipped_deployment_file_loads_under_the_strict_base(shipped):
    spec = load_deployment(SHIPPED / shipped)
    assert spec.protocol.model_config["strict"] and spec.model_config["allow_inf_nan"] is False


# -------------------------------------------------------------- privbandits audit

AUDIT = [
    (["fclub.pvt", "fclub.pvt"], "mechanism 'fclub.pvt' is given 2 times; name each mechanism once"),
    (["fclub.pvt", "--samples", str(10**12)], "--samples must be in [2, 1000000] (runs on each neighbouring input; at "
     "most 10 times fclub.pvt's default), got 1000000000000"),
    (["--samples", "1000000"], "--samples must be in [2, 100000] (runs on each neighbouring input; at most 10 times "
     "dp_linucb.shuffle's default), got 1000000"),
    (["fclub.pvt", "--seed", "-1"], "--seed must be >= 0 (the seed of the audit's runs), got -1"),
    (["fclub.pvt", "--out", "afile"], "--out must be a folder (got 'afile', an existing file)"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), AUDIT, ids=lambda v: str(v)[:40])
def test_audit_refuses_before_it_runs_or_opens_the_store(work, args, message):
    (work / "afile").write_text("not a folder")
    exactly(work, ["audit", *args, "--store", "s.sqlite"], message)


def test_audit_refuses_an_out_folder_it_cannot_write_before_the_audit_runs(work):
    with read_only(work / "ro"):
        exactly(work, ["audit", "fclub.pvt", "--samples", "10", "--store", "s.sqlite", "--out", "ro/audit"],
                "--out 'ro/audit' cannot be written: 'ro' is read-only")  # fmt: skip


# -------------------------------------------------------------- privbandits deploy certs


@pytest.mark.parametrize("days", ["0", str(10**9)])
def test_deploy_certs_refuses_a_validity_out_of_range(work, days):
    exactly(work, ["deploy", "certs", "p2b.toml", "--days", days], "--days must be in [1, 3650] (a development "
            f"certificate's validity in days: at most ten years), got {days}")  # fmt: skip


def test_a_second_deploy_certs_keeps_the_ca_and_bundles_unless_forced(work):
    """A new CA would silently invalidate every bundle already copied to the hosts: only --force replaces them."""
    path, certs = work / "vertical-vfucb.toml", (work / "certs" / "vertical").resolve()
    assert CliRunner().invoke(app, ["deploy", "certs", str(path)]).exit_code == 0
    ca = (certs / "ca.pem").read_bytes()
    exactly(work, ["deploy", "certs", path.name], f"bundles: {certs} already holds a CA and bundles (ca.pem, ca.key, "
            "mask_generator/, active/, passive2/, passive3/); a new CA would replace them and every bundle already "
            "copied to a host would stop working: add --force to replace them")  # fmt: skip
    forced = CliRunner().invoke(app, ["deploy", "certs", str(path), "--force"])
    assert forced.exit_code == 0, forced.output
    assert (certs / "ca.pem").read_bytes() != ca and (certs / "active" / "ca.pem").read_bytes() != ca


# -------------------------------------------------------------- privbandits deploy hosts


def test_deploy_hosts_refuses_a_dir_it_cannot_use_before_it_makes_a_namespace(work):
    (work / "afile").write_text("not a folder")
    with read_only(work / "ro"):
        exactly(work, ["deploy", "hosts", "p2b.toml", "--dir", "ro/hosts"],
                "--dir 'ro/hosts' cannot be written: 'ro' is read-only")  # fmt: skip
    exactly(work, ["deploy", "hosts", "p2b.toml", "--dir", "afile"],
            "--dir must be a folder (got 'afile', an existing file)")  # fmt: skip
    (work / "full").mkdir()
    (work / "full" / "a.txt").write_text("a host's files")
    exactly(work, ["deploy", "hosts", "p2b.toml", "--dir", "full"],
            "--dir must be a new or empty folder (got 'full', which holds files)")  # fmt: skip


# -------------------------------------------------------------- privbandits deploy load

LOAD = [
    (["--devices", str(10**12)], "--devices must be an integer in [1, 10000000] (simulated devices, one TLS "
     "connection each), got 1000000000000"),
    (["--seed", "-1"], "--seed must be an integer >= 0, got -1"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), LOAD, ids=lambda v: str(v)[:30])
def test_deploy_load_refuses_devices_and_seed_before_it_starts_anything(work, args, message):
    exactly(work, ["deploy", "load", "p2b.toml", *args], message)
    exactly(work, ["deploy", "load", "p2b.toml", "--local", *args], message)


# -------------------------------------------------------------- the benchmark scripts


def benchmark(tmp_path: Path, script: str, *args: str) -> subprocess.CompletedProcess:
    """``benchmarks/SCRIPT ARGS`` run in the empty folder ``tmp_path``; it must write nothing there."""
    command = [sys.executable, str(ROOT / "benchmarks" / script), *args]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert list(tmp_path.iterdir()) == [] and "Traceback" not in done.stderr
    return done


@pytest.mark.parametrize("args", [["--repeat", "0"], ["--smoke", "--repeat", "0"]])
def test_a_benchmark_refuses_no_runs_before_it_measures(tmp_path, args):
    """Every benchmark's --repeat (the shared argument parser, benchmarks/_smoke.py) is at least 1."""
    done = benchmark(tmp_path, "network_latency.py", *args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "error: --repeat must be >= 1 (runs of each "
                                                              "measurement), got 0\n")  # fmt: skip


def test_a_benchmark_without_the_bench_extra_is_one_line_naming_it(tmp_path):
    done = benchmark(tmp_path, "linear_speed.py", "--smoke")
    missing = re.search(r"No module named '(\w+)'", done.stderr)
    if done.returncode == 0 or missing is None:
        pytest.skip("the bench extra is installed")
    assert (done.returncode, done.stdout) == (2, "")
    line = f"No module named '{missing.group(1)}' (install it with make bench, or pip install -e '.[bench]')"
    assert done.stderr == f"error: linear_speed.py needs the optional bench extra: {line}\n"


# -------------------------------------------------------------- privbandits show DEPLOY.toml


def rows(output: str) -> dict[str, list[str]]:
    """The first line of each row of the tables in ``output``, by key: its cells."""
    lines = output.replace("┃", "│").splitlines()  # the header's rule, and the rows'
    cells = [[cell.strip() for cell in line.strip("│").split("│")] for line in lines]
    return {row[0]: row for row in cells if len(row) > 1 and row[0]}


def test_show_a_deployment_file_lists_its_settings_and_its_protocol_options_with_the_file_s_values(work, monkeypatch):
    """Not the experiment option table: the Deployment model's and the protocol section's fields, with type, bounds,
    default, the value the file sets and the description."""
    from privbandits import cli
    from privbandits.deploy.deployment import Deployment
    from privbandits.deploy.vertical.section import VerticalProtocol

    monkeypatch.setattr(cli.console, "_width", 300)  # one line a row, whatever width the console was made with
    done = CliRunner().invoke(app, ["show", str(work / "vertical-vfucb.toml")], env={"COLUMNS": "300"})
    assert done.exit_code == 0, done.output
    parties = "mask_generator (mask_generator), active (active), passive2 (passive), passive3 (passive)"
    header = f"vfucb-three-data-holders: deployment file of protocol vertical-o3m; parties: {parties}"
    assert done.output.splitlines()[0] == header
    assert "settings (top level)" in done.output and "[protocol] options of vertical-o3m" in done.output
    assert "-o KEY=VALUE" not in done.output and "horizon" not in done.output
    table = rows(done.output)
    assert table["key"] == ["key", "type", "bounds", "default", "this file", "description"]
    assert table["rounds"] == ["rounds", "integer", ">= 1, <= 10000000", "(required)", "500", ""]
    assert table["prefetch"][:5] == ["prefetch", "integer", ">= 1, <= 1024", "1", "16"]
    assert table["alpha"] == ["alpha", "number", ">= 0", "0.5", "0.5", "weight of the confidence width"]
    assert table["v"][:5] == ["v", "number", ">= 0", "0.01", ""]  # not set: the default holds
    assert table["deadline_s"][:5] == ["deadline_s", "number", "> 0, <= 86400", "30.0", "30"]
    fields = {*Deployment.model_fields, *VerticalProtocol.model_fields} - {"protocol", "parties", "source", "name"}
    assert fields <= set(table)  # every field of the models, none listed by hand


def test_show_a_deployment_file_of_an_unknown_protocol_is_one_line(work):
    path = work / "p2b.toml"
    path.write_text(path.read_text().replace('name = "p2b"', 'name = "nope"'))
    exactly(work, ["show", "p2b.toml"], "p2b.toml: protocol.name: must be one of 'vertical-o3m', "
            "'mpc-epsilon-greedy', 'p2b', 'fclub', got 'nope'")  # fmt: skip
