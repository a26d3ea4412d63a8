"""The package as a user installs it (issue 30 item 6, issue 28 item 4): a wheel built from the tree after a
deployment ran in it holds the package and the shipped TOML files only (no key, certificate, data, result or
checkpoint), and, installed into a fresh virtual environment, runs from an empty folder: ``privbandits list``
(which shows the shipped examples), a shipped example by name, a small paper reproduction and ``data list``; and
the Deploy quick start with a shipped deployment named alone (issue 45 item 6: the first command copies it into the
folder, the later ones use the copy, nothing is written inside the installed package), and the OBD example, with
no sample at hand, says in one line how to fetch it.

The fresh environment has no pip packages of its own: a ``.pth`` file puts the dependencies of the Python that
runs the tests on its path (a plain path entry: that site's own ``.pth`` files, e.g. an editable install of
privbandits, are not processed), and the test checks that ``privbandits`` is imported from the installed wheel.
Building the wheel needs ``hatchling`` (pip fetches it into its build environment, or takes it from its cache).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from project_paths import ROOT

SECRETS = (".key", ".pem", ".npz", ".npy", ".sqlite", ".json", ".csv", ".ckpt")


def tracked_tree(destination: Path) -> Path:
    """A copy of the files git tracks (and untracked ones it does not ignore): the tree a user would build."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def deployed_in(tree: Path) -> list[str]:
    """Run the README's deployment set-up in ``tree`` and leave results, checkpoints and a store beside the
    files; the files written under configs/, relative to it."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    for name in ("p2b", "mpc-epsilon-greedy"):
        deployment = f"configs/deploy/{name}.toml"
        run([sys.executable, "-m", "privbandits", "deploy", "certs", deployment], tree, env)  # bundles in the file
        run([sys.executable, "-m", "privbandits", "deploy", "data", deployment], tree, env)
    for junk in ("deploy/out/server.result.json", "deploy/checkpoints/server.npz", "results/results.sqlite",
                 "examples/results/example-p2b-synthetic-summary.csv"):  # fmt: skip
        (tree / "configs" / junk).parent.mkdir(parents=True, exist_ok=True)
        (tree / "configs" / junk).write_text("written by a run")
    configs = tree / "configs"
    return sorted(str(p.relative_to(configs)) for p in configs.rglob("*") if p.is_file() and p.suffix != ".toml")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tree = tracked_tree(tmp_path_factory.mktemp("tree"))
    written = deployed_in(tree)
    assert any(name.endswith(".key") for name in written) and any(name.endswith(".npz") for name in written)
    dist = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(tree)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    if done.returncode and "hatchling" in done.stderr and "No matching distribution" in done.stderr:
        pytest.skip("cannot build the wheel: hatchling is neither reachable nor in pip's cache")
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = dist.glob("privbandits-*.whl")
    return built


@pytest.mark.slow  # 8 to 20 s on 2 cores: a copy of the tree, four set-up commands, then pip builds the wheel
def test_the_wheel_ships_the_toml_files_and_no_secret_data_or_result(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(n.removeprefix("privbandits/configs/") for n in names if n.startswith("privbandits/configs/"))
    tracked = sorted(str(p.relative_to(ROOT / "configs")) for p in (ROOT / "configs").rglob("*.toml")
                     if subprocess.run(["git", "ls-files", "--error-unmatch", str(p)], cwd=ROOT,
                                       capture_output=True).returncode == 0)  # fmt: skip
    assert shipped == tracked
    assert not [n for n in names if n.endswith(SECRETS) or "/certs/" in n or "/data/" in n or "__pycache__" in n]
    assert "privbandits/py.typed" in names and "privbandits/__main__.py" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Classifier: License :: OSI Approved :: MIT License" in metadata
    assert "Classifier: Typing :: Typed" in metadata
    points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "[privbandits.reproductions]\npapers = privbandits.papers.catalog:CATALOG" in points  # the papers layer


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> dict:
    """The wheel installed into a fresh virtual environment: its python, its site folder, and the environment a
    command runs in (its bin first on PATH; no PYTHONPATH, no offline data, an empty data cache)."""
    root = tmp_path_factory.mktemp("installed")
    env_dir = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    python = env_dir / "bin" / "python"
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root,
                    {**os.environ}).strip())  # fmt: skip
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        root, {**os.environ})  # fmt: skip
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PRIVBANDITS_SHARED_DATA")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}"
    env["PRIVBANDITS_DATA"] = str(root / "empty-cache")
    return {"python": python, "site": site, "env": env}


@pytest.mark.slow  # about 40 s on 2 cores: a venv, an install and five commands
def test_the_installed_wheel_runs_from_an_empty_folder(installed, tmp_path):
    python, site, env = installed["python"], installed["site"], installed["env"]
    empty = tmp_path / "empty"
    empty.mkdir()
    where = run([str(python), "-c", "import privbandits; print(privbandits.__file__)"], empty, env)
    assert Path(where.strip()).is_relative_to(site)
    listed = run(["privbandits", "list"], empty, env)
    for name in ("example-mpc-vs-twin-digits", "example-fclub-vs-club", "example-p2b-synthetic", "vertical-fig4",
                 "fclub-fig2", "privacy-map"):  # the shipped configs, and the papers layer's catalog
        assert name in listed
    store = ["--store", "r.sqlite", "--out", "out", "--no-progress"]
    ran = run(["privbandits", "run", "example-mpc-vs-twin-digits", "-o", "horizon=5", "-o", "seeds=0", *store],
              empty, env)  # fmt: skip
    assert "computed 4 unit(s)" in ran
    ran = run(["privbandits", "run", "mpc-fig4", "-o", "arm_counts=2,3", "-o", "rounds=1", *store], empty, env)
    assert "computed" in ran and (empty / "out" / "mpc-fig4-paper.md").is_file()
    assert "mnist5k" in run(["privbandits", "data", "list"], empty, env)
    assert "privbandits 0.1.0" in run([str(python), "-m", "privbandits", "--version"], empty, env)
    # the OBD sample is neither beside an installed package nor in the (empty) cache: one line naming the fetch
    refused = subprocess.run(["privbandits", "run", "example-vfucb-obd-replay", *store], cwd=empty, env=env,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert refused.returncode == 2 and refused.stdout == "" and refused.stderr.count("\n") == 1
    assert "run `privbandits data fetch obd`" in refused.stderr and "Traceback" not in refused.stderr
    assert sorted(p.name for p in empty.iterdir()) == ["out", "r.sqlite"]


@pytest.mark.slow  # about 30 s on 2 cores (with the venv of the test above): three commands, four party processes
def test_the_deploy_quick_start_runs_from_an_empty_folder_with_only_the_wheel(installed, tmp_path):
    env, shipped = {**installed["env"], "COLUMNS": "300"}, installed["site"] / "privbandits" / "configs" / "deploy"
    before = sorted(p.relative_to(shipped) for p in shipped.rglob("*"))
    empty = tmp_path / "empty"
    empty.mkdir()
    certs = subprocess.run(["privbandits", "deploy", "certs", "mpc-epsilon-greedy"], cwd=empty, env=env,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert certs.returncode == 0, certs.stderr
    copy = empty / "mpc-epsilon-greedy.toml"
    assert certs.stderr.startswith(f"copied the shipped deployment mpc-epsilon-greedy to {copy}:")
    assert copy.read_bytes() == (shipped / "mpc-epsilon-greedy.toml").read_bytes()
    assert f"one bundle per party in {empty / 'certs' / 'mpc'}" in certs.stdout
    copy.write_text(copy.read_text().replace("\nrounds = 500\n", "\nrounds = 12\n"))  # edit the copy: it runs
    written = run(["privbandits", "deploy", "data", "mpc-epsilon-greedy"], empty, env)
    assert f"bank: {empty / 'data' / 'bank.npz'}\n" in written
    local = run(["privbandits", "deploy", "local", "mpc-epsilon-greedy", "--no-progress"], empty, env)
    assert f"results: {empty / 'out'}" in local
    result = json.loads((empty / "out" / "environment.result.json").read_text())
    assert result["rounds"] == 12
    assert sorted(p.name for p in empty.iterdir()) == ["certs", "data", "mpc-epsilon-greedy.toml", "out"]
    assert sorted(p.relative_to(shipped) for p in shipped.rglob("*")) == before  # nothing beside the shipped file
    unknown = subprocess.run(["privbandits", "deploy", "data", "mpc"], cwd=empty, env=env, capture_output=True,
                             text=True, timeout=120)  # fmt: skip
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
    assert "(shipped: fclub, mpc-epsilon-greedy, p2b, vertical-vfucb;" in unknown.stderr
