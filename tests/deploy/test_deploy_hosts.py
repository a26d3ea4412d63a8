"""Separate hosts for real (issue 28): every party in a network namespace of its own, with its own address, run
from a folder that holds only the shared deployment file, its own bundle and its own data; each deployment's
result equals its in-memory run (reproducible mode). Linux as root only; skipped with the reason elsewhere."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import small_deployments as small

from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.hosts import BUNDLES, data_file, run_hosts, unavailable

WHY = unavailable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"separate hosts need network namespaces: {WHY}")


def held_files(folder: Path) -> set[str]:
    """What a host's folder holds besides what the party wrote (its log and its output)."""
    return {
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if path.is_file() and path.name != "party.log" and path.relative_to(folder).parts[0] != "out"
    }


def expected_files(spec, name: str) -> set[str]:
    files = {
        "deployment.toml",
        f"{BUNDLES}/{name}/ca.pem",
        f"{BUNDLES}/{name}/{name}.pem",
        f"{BUNDLES}/{name}/{name}.key",
    }
    return files | ({data_file(name)} if spec.parties[name].data is not None else set())


HOSTED = [kind if kind == "vertical" else pytest.param(kind, marks=pytest.mark.slow) for kind in small.KINDS]
"""The vertical deployment runs in the default suite; the other three (a minute each on 2 cores) are slow."""


@pytest.mark.parametrize("kind", HOSTED)
def test_each_party_on_a_host_of_its_own_equals_the_in_memory_run(tmp_path, encoder_cache, kind):
    (tmp_path / "source").mkdir()
    spec = load_deployment(small.deployment(kind, tmp_path / "source"))
    run = run_hosts(spec, tmp_path / "hosts", timeout_s=240)
    assert run.codes == dict.fromkeys(spec.parties, 0), run.stderr
    texts = {(tmp_path / "hosts" / name / "deployment.toml").read_bytes() for name in spec.parties}
    assert len(texts) == 1, "every host holds the same deployment file"
    for name in spec.parties:
        folder = tmp_path / "hosts" / name
        assert held_files(folder) == expected_files(spec, name)  # its own bundle and data only: no other party's
        assert {path.name for path in (folder / BUNDLES).iterdir()} == {name}
        assert run.results[name]["randomness"] == "reproducible"
    spec.output.mkdir(parents=True, exist_ok=True)
    for name in spec.parties:  # the in-memory comparison reads the result files where the source layout keeps them
        shutil.copyfile(tmp_path / "hosts" / name / "out" / f"{name}.result.json", spec.result_path(name))
    small.assert_equals_in_memory(kind, spec, flooded=False)
