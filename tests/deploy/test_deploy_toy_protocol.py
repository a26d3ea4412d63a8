"""A protocol from the test suite deploys through the registry: no edit outside its package (tests/toy_protocol/).

The toy (two roles, typed messages) is registered by the test, read from a deployment file written here, its
certificates made by ``deploy certs``, and its two parties run as the project runs real ones (the party runner,
mutual TLS on 127.0.0.1), in threads of this process; each must equal the toy's in-memory run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from project_paths import ROOT, TESTS
from toy_protocol import EXAMPLE as TOY_FILE
from toy_protocol import NAME, TOY, ToyProtocol
from typer.testing import CliRunner

from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import DeploymentError, load_deployment
from privbandits.deploy.local import resolve_local
from privbandits.deploy.party import protocol_of, run_party
from privbandits.deploy.registry import ENTRY_POINTS, PROTOCOLS

BUILT_IN = "'vertical-o3m' or 'mpc-epsilon-greedy' or 'p2b' or 'fclub'"



def _write(tmp_path: Path, text: str = TOY_FILE) -> Path:
    path = tmp_path / "toy.toml"
    path.write_text(text)
    return path


def _run_threads(spec) -> dict[str, dict]:
    """Every party in a thread of its own on 127.0.0.1 (its listener bound first), each joined within 60 s."""
    resolved, listeners = resolve_local(spec)
    results: dict[str, dict] = {}
    errors: list[BaseException] = []

    def play(name: str) -> None:
        try:
            results[name] = run_party(resolved, name, listener=listeners[name])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=play, args=(name,), daemon=True) for name in resolved.parties]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads) and not errors, errors
    return results


def test_a_registered_toy_protocol_deploys_over_mutual_tls_and_equals_its_in_memory_run(tmp_path):
    path = _write(tmp_path)
    with PROTOCOLS.extended(TOY):
        certs = CliRunner().invoke(standalone, ["deploy", "certs", str(path)])
        assert certs.exit_code == 0, certs.output
        spec = load_deployment(path)
        assert isinstance(protocol_of(spec), ToyProtocol) and spec.protocol.rounds == 5
        results = _run_threads(spec)
        totals, network = TOY.run_in_memory(spec)
    asker, answerer = results["asker"], results["answerer"]
    assert asker["totals"] == totals and len(totals) == 5 and answerer["answered"] == 5
    # the results on disk are the runner's: the protocol's fields plus the transport's ledgers
    on_disk = json.loads(spec.result_path("asker").read_text())
    assert on_disk == json.loads(json.dumps(asker)) and {"traffic", "wire", "refusals"} <= set(on_disk)
    # the same messages, in the same rounds, on the TLS links as in memory (5 questions one way, 5 answers back)
    deployed = {(row[1], row[2]): row[3] for result in results.values() for row in result["traffic"]}
    in_memory = {(sender, receiver): messages for _, sender, receiver, messages, _, _ in network.traffic.rows()}
    assert deployed == in_memory == {("asker", "answerer"): 5, ("answerer", "asker"): 5}
    assert TOY.summary(asker) == "5 sums checked" and TOY.summary(answerer) == "done"


def test_the_registry_is_restored_and_names_a_registered_protocol_in_its_errors(tmp_path):
    path = _write(tmp_path)
    unknown = f"protocol.name: Input should be {BUILT_IN}"
    with pytest.raises(DeploymentError, match=f"^{path}: {unknown}$"):
        load_deployment(path)  # not registered (yet): the built-ins' message, unchanged
    with PROTOCOLS.extended(TOY):
        assert PROTOCOLS.names()[-1] == NAME
        with pytest.raises(DeploymentError, match=f"{unknown} or 'toy-sum'$"):
            load_deployment(_write(tmp_path, TOY_FILE.replace('name = "toy-sum"', 'name = "toy-product"')))
        with pytest.raises(DeploymentError, match="parties: exactly one party must have role 'asker', found 2"):
            load_deployment(_write(tmp_path, TOY_FILE.replace('role = "answerer"', 'role = "asker"')))
        with pytest.raises(ValueError, match="protocol 'toy-sum' is already registered"):
            PROTOCOLS.register(TOY)
        # the CLI asks the protocol for its data files: the toy has none to write
        data = CliRunner().invoke(standalone, ["deploy", "data", str(_write(tmp_path))])
        assert data.exit_code == 2 and "protocol 'toy-sum' has no synthetic data files to write" in data.output
    assert NAME not in PROTOCOLS.names()
    with pytest.raises(DeploymentError, match=f"^{path}: {unknown}$"):
        load_deployment(path)


def test_an_installed_toy_protocol_runs_as_processes_with_deploy_local(tmp_path):
    """Declared as an entry point by an installed package (its ``.dist-info`` on the path), the toy is found by every
    process: ``deploy certs`` and ``deploy local`` in a process of their own, each party in another."""
    site = tmp_path / "site" / "toy_plugin-0.1.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 0.1\n")
    (site / "entry_points.txt").write_text(f"[{ENTRY_POINTS}]\n{NAME} = toy_protocol:TOY\n")
    paths = [str(site.parent), str(TESTS), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "COLUMNS": "200"}
    path = _write(tmp_path)
    for command in (["certs", str(path)], ["local", str(path), "--no-progress"]):
        done = subprocess.run([sys.executable, "-m", "privbandits.deploy.cli", "deploy", *command], env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    assert "5 sums checked" in done.stdout  # the protocol's summary in the report
    with PROTOCOLS.extended(TOY):
        spec = load_deployment(path)
        totals, _ = TOY.run_in_memory(spec)
    assert json.loads(spec.result_path("asker").read_text())["totals"] == totals
    assert json.loads(spec.result_path("answerer").read_text())["answered"] == 5


def test_no_module_of_the_library_names_the_toy_protocol():
    found = subprocess.run(["grep", "-rIl", "-e", "toy-sum", "-e", "toy_protocol", str(ROOT / "src")],
                           capture_output=True, text=True)  # fmt: skip
    assert found.returncode == 1 and found.stdout == ""  # grep: 1 = no match (2 would be an error)
