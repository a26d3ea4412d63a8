"""The Open Bandit Dataset sample from the data cache (issue 45 item 6): ``privbandits data fetch obd`` takes it
from the ``obp`` 0.5.5 source distribution on PyPI (its SHA-256 and each kept file's pinned), the OBD replay
environment and the reproductions find it there when no offline data (``$PRIVBANDITS_SHARED_DATA``,
``../shared/data``) holds it, and where neither does, ``privbandits run example-vfucb-obd-replay`` says in one
line how to get it (exit 2, no traceback). On generated fixtures, without network; the pins are checked against
the real sample where ``../shared/data`` has it, and a slow test fetches the real package."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import tarfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from obd_fixture import write_obd
from project_paths import ROOT

from privbandits.datasets import cache
from privbandits.datasets.obd import default_obd_path, load_obd
from privbandits.experiments.config import parse_config

REAL = ROOT.parent / "shared" / "data" / "obd"
INNER = "obp-0.5.5/obp/dataset/obd/"


def sdist(campaign: Path) -> bytes:
    """An obp-like source distribution holding ``campaign``'s two files where the real one has the sample."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name in ("setup.py", *(f"obp/dataset/obd/random/all/{f}" for f in ("all.csv", "item_context.csv"))):
            data = (campaign / Path(name).name).read_bytes() if name != "setup.py" else b"# not run\n"
            info = tarfile.TarInfo(f"obp-0.5.5/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def places(tmp_path, monkeypatch):
    """No offline data, an empty cache, and the obd source re-pinned to a generated campaign's package."""
    campaign = tmp_path / "made" / "random" / "all"
    write_obd(campaign, np.random.default_rng(3), n_events=120, n_items=5)
    package = tmp_path / "obp-0.5.5.tar.gz"
    package.write_bytes(sdist(campaign))
    members = {
        kept: (inner, hashlib.sha256((campaign / Path(kept).name).read_bytes()).hexdigest())
        for kept, (inner, _) in cache.SOURCES["obd"].members.items()
    }
    spec = replace(cache.SOURCES["obd"], sha256=cache.sha256_of(package), size=package.stat().st_size, members=members)
    monkeypatch.setitem(cache.SOURCES, "obd", spec)
    monkeypatch.setenv(cache.SHARED_ENV, str(tmp_path / "no-shared-data"))
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    return {"campaign": campaign, "package": package, "cache": tmp_path / "cache", "shared": tmp_path / "shared"}


def test_the_pins_name_the_sample_inside_the_obp_source_distribution():
    spec = cache.SOURCES["obd"]
    assert (spec.package, spec.client, spec.filename) == ("obp==0.5.5", "pip", "obp-0.5.5.tar.gz")
    assert spec.url.startswith("https://files.pythonhosted.org/") and spec.url.endswith("/obp-0.5.5.tar.gz")
    assert {kept: inner for kept, (inner, _) in spec.members.items()} == {
        "random/all/all.csv": INNER + "random/all/all.csv",
        "random/all/item_context.csv": INNER + "random/all/item_context.csv",
    }


@pytest.mark.skipif(not (REAL / "random" / "all").is_dir(), reason=f"the OBD sample is not at {REAL}")
def test_the_pinned_checksums_are_the_real_samples(tmp_path):
    for kept, (_, digest) in cache.SOURCES["obd"].members.items():
        assert cache.sha256_of(REAL / kept) == digest
    written = cache.install_from("obd", REAL, tmp_path)  # `data fetch obd --from ../shared/data/obd`
    assert [p.relative_to(tmp_path) for p in written] == [Path("obd/random/all/all.csv"),
                                                          Path("obd/random/all/item_context.csv")]  # fmt: skip
    assert load_obd(tmp_path / "obd" / "random" / "all").n_events == 10_000


def test_fetch_keeps_the_campaign_files_and_the_replay_finds_them_in_the_cache(places, monkeypatch):
    calls = []

    def download(spec, into):
        calls.append(spec.name)
        (into / spec.filename).write_bytes(places["package"].read_bytes())

    monkeypatch.setitem(cache.DOWNLOADERS, "pip", download)
    assert default_obd_path() is None
    written = cache.fetch("obd")
    folder = places["cache"] / "obd" / "random" / "all"
    assert calls == ["obd"] and sorted(written) == [folder / "all.csv", folder / "item_context.csv"]
    assert (folder / "all.csv").read_bytes() == (places["campaign"] / "all.csv").read_bytes()
    assert not any((places["cache"] / "packages").iterdir())  # the package is not kept
    assert default_obd_path() == folder
    config = parse_config({"name": "obd", "horizon": 5, "seeds": [0], "environment": {"kind": "obd_replay"},
                           "policies": [{"kind": "random"}]})  # fmt: skip
    assert config.environment.path == str(folder)
    assert load_obd(folder).n_events == 120


def test_the_offline_data_comes_first_and_a_corrupt_cache_is_named(places, monkeypatch):
    cache.install_from("obd", places["package"])
    shared = places["shared"] / "obd" / "random" / "all"
    write_obd(shared, np.random.default_rng(4), n_events=50, n_items=5)
    monkeypatch.setenv(cache.SHARED_ENV, str(places["shared"]))
    assert default_obd_path() == shared
    monkeypatch.setenv(cache.SHARED_ENV, str(places["shared"] / "elsewhere"))
    (places["cache"] / "obd" / "random" / "all" / "all.csv").write_text("tampered")
    with pytest.raises(cache.DataCorruptError, match="obd file .* SHA-256 expected .*; run `privbandits data fetch"):
        default_obd_path()


def test_a_campaign_folder_or_the_obd_folder_fills_the_cache(places):
    assert cache.install_from("obd", places["campaign"]) == cache.install_from("obd", places["campaign"].parents[1])
    assert cache.is_cached("obd")


def test_a_source_distribution_is_fetched_by_pip_and_else_from_its_pinned_address(monkeypatch, tmp_path):
    spec = cache.SOURCES["obd"]
    commands = []

    def pip_fails(command, cwd, what, instead):
        commands.append(command)
        raise cache.FetchError("no build backend")

    def served(url, timeout):
        assert url == spec.url
        return io.BytesIO(b"the package bytes")

    monkeypatch.setattr(cache, "_run", pip_fails)
    monkeypatch.setattr(cache.urllib.request, "urlopen", served)
    cache.DOWNLOADERS["pip"](spec, tmp_path)
    (command,) = commands
    assert command[:4] == [sys.executable, "-m", "pip", "download"] and "obp==0.5.5" in command
    assert command[command.index("--no-binary") + 1] == ":all:" and "--no-deps" in command
    assert (tmp_path / spec.filename).read_bytes() == b"the package bytes"  # checked against the pin by fetch


def test_the_example_says_in_one_line_how_to_get_the_sample(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), cache.SHARED_ENV: str(tmp_path / "none"),
           cache.CACHE_ENV: str(tmp_path / "cache"), "COLUMNS": "80"}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "privbandits", "run", "example-vfucb-obd-replay", "--store",
                           str(tmp_path / "r.sqlite"), "--out", str(tmp_path / "out"), "--no-progress"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: the Open Bandit Dataset sample is absent: run `privbandits data fetch obd`")
    assert not (tmp_path / "r.sqlite").exists()


@pytest.mark.skipif(not (REAL / "random" / "all").is_dir(), reason=f"the OBD sample is not at {REAL}")
def test_the_example_runs_on_the_sample_from_the_cache(tmp_path, monkeypatch):
    from privbandits.experiments.catalog import find

    cache.install_from("obd", REAL, tmp_path / "cache")
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(cache.SHARED_ENV, str(tmp_path / "none"))
    config = find("example-vfucb-obd-replay").parse({"horizon": "50", "seeds": "0"})
    assert config.environment.path == str(tmp_path / "cache" / "obd" / "random" / "all")
    assert config.environment.partition == (41, 161)


@pytest.mark.slow  # the network: pip downloads the 1.3 MB source distribution from PyPI
def test_the_real_package_is_fetched_and_checked(tmp_path):
    written = cache.fetch("obd", root=tmp_path)
    assert len(written) == 2 and load_obd(written[0].parent).n_events == 10_000
