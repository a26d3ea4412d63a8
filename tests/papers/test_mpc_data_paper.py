"""MPC reproductions on real data from the cache (issue 15, item 2), on generated fixtures in the real
files' formats: ``data=auto`` picks MNIST-5k when cached and the digits stand-in otherwise, reports
say which data ran, explicit choices need their cache, and the data file's identity keys the tasks."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import replace

import numpy as np
import pytest
from mnist5k_fixture import write_mnist5k as _write_mnist5k

from privbandits.datasets import cache
from privbandits.datasets.mnist import MNIST_FILES
from privbandits.experiments.catalog import find
from privbandits.experiments.overrides import OptionError
from privbandits.experiments.reproduction import report, run
from privbandits.experiments.store import ResultsStore
from privbandits.papers.mpc.reference import PAPER_REWARD_LEVEL


def _repin(monkeypatch, name: str, folder) -> None:
    """Pin the cache's checksums of ``name`` to the fixture files in ``folder``."""
    spec = cache.SOURCES[name]
    members = {
        kept: (inner, hashlib.sha256((folder / kept).read_bytes()).hexdigest())
        for kept, (inner, _) in spec.members.items()
    }
    monkeypatch.setitem(cache.SOURCES, name, replace(spec, members=members))


@pytest.fixture
def data_cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    return root


@pytest.fixture
def mnist5k(data_cache, monkeypatch):
    folder = data_cache / "mnist5k"
    folder.mkdir(parents=True)
    _write_mnist5k(folder / "mnist_5k.csv.gz")
    _repin(monkeypatch, "mnist5k", folder)
    return folder / "mnist_5k.csv.gz"


@pytest.fixture
def fashion(data_cache, monkeypatch):
    folder = data_cache / "fashion-mnist"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(3)
    for part, n in (("train", 50), ("test", 20)):
        arrays = {"images": rng.integers(0, 256, size=(n, 28, 28)), "labels": np.arange(n) % 10}
        for what, array in arrays.items():
            header = bytes([0, 0, 8, array.ndim]) + np.array(array.shape, ">u4").tobytes()
            data = header + array.astype(np.uint8).tobytes()
            (folder / f"{MNIST_FILES[f'{part}_{what}']}.gz").write_bytes(gzip.compress(data, mtime=0))
    _repin(monkeypatch, "fashion-mnist", folder)
    return folder


def _run(name, raw, store, out):
    reproduction = find(name)
    options = reproduction.parse(raw)
    summary, paper = run(reproduction, options, store, out, progress=False)
    assert report(reproduction, options, store, out).markdown() == paper.markdown()
    return options, summary, paper


def test_auto_falls_back_to_the_labelled_stand_in_without_a_cache(data_cache):
    options = find("mpc-fig2").parse({})
    assert options.data == "digits"  # resolved at parse time: the store remembers what ran
    with pytest.raises(OptionError, match=r"option data: mnist5k is not in the data cache; run `privbandits data "
                       r"fetch mnist5k` first"):  # fmt: skip
        find("mpc-fig2").parse({"data": "mnist5k"})
    with pytest.raises(OptionError, match="privbandits data fetch fashion-mnist"):
        find("mpc-fig7").parse({"data": "fashion"})


def test_auto_runs_real_mnist5k_when_cached_and_says_so(mnist5k, tmp_path):
    assert find("mpc-fig2").parse({}).data == "mnist5k"
    with ResultsStore(tmp_path / "r.sqlite") as store:
        options, summary, paper = _run("mpc-fig2", {"epsilons": "0.1", "runs": "1"}, store, tmp_path / "out")
    assert options.data == "mnist5k" and len(summary.computed) == 2
    assert not any("STAND-IN" in note for note in paper.notes)
    note = next(note for note in paper.notes if note.startswith("DATA:"))
    assert "MNIST-5k" in note and "64 training rounds, 16 held out" in note
    assert "at <data cache>/mnist5k/mnist_5k.csv.gz" in note and str(mnist5k) not in note  # not this machine's path
    level = paper.claims[1]
    assert level.paper.startswith(f"≈ {PAPER_REWARD_LEVEL}") and "MNIST-5k" in level.ours and "64 rounds" in level.ours
    assert level.verdict in ("reproduced", "partly", "not reproduced")


def test_the_mnist5k_file_identity_keys_the_tasks(mnist5k, monkeypatch):
    def keys(name, raw):
        reproduction = find(name)
        return {task.key for task in reproduction.tasks(reproduction.parse(raw))}

    before = {name: keys(name, {"runs": "1"}) for name in ("mpc-fig2", "mpc-fig7", "mpc-fig9")}
    assert before["mpc-fig9"].isdisjoint(keys("mpc-fig9", {"runs": "1", "data": "digits"}))
    _write_mnist5k(mnist5k, seed=1)  # another file in the same place
    _repin(monkeypatch, "mnist5k", mnist5k.parent)
    for name, old in before.items():
        assert old.isdisjoint(keys(name, {"runs": "1"})), name
    mnist5k.write_bytes(mnist5k.read_bytes() + b"\n")  # no longer the pinned file: refused, both checksums named
    with pytest.raises(cache.DataCorruptError, match="SHA-256 expected .*, got "):
        find("mpc-fig9").tasks(find("mpc-fig9").parse({"runs": "1"}))


def test_fashion_mnist_runs_fig7_and_is_named(fashion, tmp_path):
    raw = {"epsilons": "0.1", "runs": "1", "checkpoints": "2", "data": "fashion"}
    with ResultsStore(tmp_path / "r.sqlite") as store:
        options, _, paper = _run("mpc-fig7", raw, store, tmp_path / "out")
    note = next(note for note in paper.notes if note.startswith("DATA:"))
    assert options.data == "fashion" and "Fashion-MNIST" in note and "50 training rounds, 20 held out" in note


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"data": "mnist"}, "data = 'mnist' reads the IDX folder given as mnist=<folder>, or the data cache's MNIST"),
        ({"data": "mnist10"}, "data"),
        ({"data": "digits", "mnist": "FOLDER"}, "mnist=<folder> is read only with data = 'mnist' or 'auto'"),
    ],
)
def test_bad_data_choices_are_refused_naming_the_key(raw, message, data_cache, tmp_path):
    for stem in MNIST_FILES.values():
        (tmp_path / stem).touch()
    raw = {key: str(tmp_path) if value == "FOLDER" else value for key, value in raw.items()}
    with pytest.raises(OptionError, match=message) as error:
        find("mpc-fig2").parse(raw)
    assert "\n" not in str(error.value)
