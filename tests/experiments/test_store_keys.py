"""Store keys are pinned: one experiment per environment kind and per policy kind, and every unit of every
reproduction at its default options, so a refactoring that moves config classes or grids cannot silently
orphan stored results (issue 32: "the store keys unchanged").

A unit's store key is :attr:`Task.key`: SHA-256 of the canonical JSON of ``(function, parameters)``; a config
run also records ``config_hash(run_spec)``. Both hash JSON text of ints, strings, booleans and floats written
by ``json.dumps`` (the shortest text that reads back the same double, ``repr``), never the bytes of a float,
so they are the same on every machine where the floats are (literal options are; mpc-fig3 and mpc-fig6 key
ε = |A|·exp(−η), which assumes a correctly rounded ``math.exp``). Only the absolute path of a data file is
not: a parameter ``{"path", "sha256"}`` (:func:`file_identity`) is pinned with its path made relative to a
named root (the test's temporary folder, the offline data folder); the content hash stays. Where no data file
is read the pinned key is the store key itself. The data cache is empty under the tests (conftest), so the
MPC reproductions' default data is the digits stand-in."""

from __future__ import annotations

import hashlib
import re
import zipfile
from io import BytesIO
from pathlib import Path

import numpy as np
import pytest
from mnist_idx_fixture import write_idx

from privbandits.datasets.cache import shared_data_dir
from privbandits.datasets.mnist import MNIST_FILES
from privbandits.experiments.config import ENVIRONMENT_CONFIGS, POLICY_CONFIGS, by_kind, config_hash, parse_config
from privbandits.experiments.runner import run_tasks_of
from privbandits.experiments.tasks import Task, file_identity

SHARED = shared_data_dir()
OBD = None if SHARED is None else SHARED / "obd" / "random" / "all"
FCLUB = None if SHARED is None else SHARED / "fclub"
HAS_SHARED = OBD is not None and OBD.is_dir() and FCLUB.is_dir()


# -- small, deterministic data files (exact bytes on every machine) ---------------------------------------------
def _mnist_folder(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for part, n in (("train", 20), ("test", 10)):
        write_idx(folder / MNIST_FILES[f"{part}_images"], (np.arange(n * 36).reshape(n, 6, 6) * 7) % 256)
        write_idx(folder / MNIST_FILES[f"{part}_labels"], np.arange(n) % 10)
    return folder


def _mnist5k_file(path: Path) -> Path:
    rows = [",".join(map(str, [*((np.arange(784) * (label + 3) + row) % 256), label]))
            for label in range(10) for row in range(4)]  # fmt: skip
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _npy(array: np.ndarray) -> bytes:
    buffer = BytesIO()
    np.lib.format.write_array(buffer, np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")), version=(1, 0))
    return buffer.getvalue()


def _matrix(path: Path) -> Path:
    """A 12 users × 8 items 0/1 matrix (.npy)."""
    path.write_bytes(_npy((np.add.outer(np.arange(12), 2 * np.arange(8)) % 3 == 0).astype(float)))
    return path


def _log(path: Path, n: int = 60) -> Path:
    """A uniformly-random log (.npz written with fixed zip dates, so its bytes are fixed)."""
    arrays = {
        "user_features": (np.arange(n * 3).reshape(n, 3) % 5) / 4,
        "item_features": (np.arange(10).reshape(5, 2) % 3) / 2,
        "actions": np.arange(n) % 5,
        "rewards": (np.arange(n) % 4 == 0).astype(float),
        "propensities": np.full(n, 0.2),
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            archive.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), _npy(array))
    return path


def _portable(value, roots: dict[str, Path]):
    """``value`` with every ``{"path", "sha256"}`` path relative to the root it lies under, named ``$NAME``."""
    if isinstance(value, dict):
        if set(value) == {"path", "sha256"}:
            path = Path(value["path"])
            for name, root in roots.items():
                if path.is_relative_to(root.resolve()):
                    return {"path": f"${name}/{path.relative_to(root.resolve()).as_posix()}", "sha256": value["sha256"]}
            raise AssertionError(f"a data file outside the named roots: {path}")
        return {key: _portable(item, roots) for key, item in value.items()}
    if isinstance(value, list):
        return [_portable(item, roots) for item in value]
    return value


def _key(task: Task, roots: dict[str, Path]) -> str:
    """The task's store key with data-file paths made relative: the store key itself when it reads no file."""
    portable = _portable(task.params, roots)
    return task.key if portable == task.params else Task(task.fn, portable).key


def _roots(folder: Path) -> dict[str, Path]:
    return {"TMP": folder} | ({} if SHARED is None else {"SHARED": SHARED})


# -- one experiment per environment kind and per policy kind -----------------------------------------------------
LINEAR = {"kind": "linear_gaussian", "dim": 4, "n_arms": 3}
USERS = {"kind": "clustered_users", "n_users": 8, "n_clusters": 2, "n_servers": 2, "dim": 4, "n_arms": 3}
DIGITS = {"kind": "digits", "pca_components": 6}
POPULATION = {"kind": "p2b_synthetic", "n_users": 100, "dim": 3, "n_actions": 4}
P2B = {"kind": "p2b", "n_codes": 16, "threshold": 2}

ENVIRONMENTS = {  # kind: (environment, a policy that runs on it); "<tmp>" is replaced by the test's folder
    "linear_gaussian": (LINEAR, {"kind": "linucb"}),
    "digits": (DIGITS, {"kind": "epsilon_greedy"}),
    "mnist": ({"kind": "mnist", "path": "<tmp>/mnist", "pca_components": 5}, {"kind": "epsilon_greedy"}),
    "mnist5k": ({"kind": "mnist5k", "path": "<tmp>/mnist_5k.csv", "pca_components": 5}, {"kind": "random"}),
    "clustered_users": (USERS, {"kind": "fclub", "noise_variance": "squared_log"}),  # as stored (default till issue 47)
    "pooled_users": (
        {**USERS, "kind": "pooled_users", "path": "<tmp>/matrix.npy", "n_users": 10, "dim": 3},
        {"kind": "club"},
    ),
    "kmeans_arms": ({"kind": "kmeans_arms", "pca_components": 8, "n_arms": 4}, {"kind": "epsilon_greedy"}),
    "multilabel": ({"kind": "multilabel", "n_actions": 5, "dim": 6}, {"kind": "linucb", "layout": "disjoint"}),
    "obd_replay": ({"kind": "obd_replay", "position": 1}, {"kind": "vfucb", "partition": "<obd>"}),
    "logged_replay": ({"kind": "logged_replay", "path": "<tmp>/log.npz"}, {"kind": "lints"}),
    "p2b_synthetic": (POPULATION, P2B),
    "multilabel_population": ({"kind": "multilabel_population", "dim": 4, "n_actions": 5}, P2B),
}
POLICIES = {  # kind: (environment, policy)
    "linucb": (LINEAR, {"kind": "linucb", "alpha": 0.5, "tie_break": "random"}),
    "lints": (LINEAR, {"kind": "lints", "v": 0.1, "sampler": "eigh"}),
    "epsilon_greedy": (DIGITS, {"kind": "epsilon_greedy", "epsilon": 0.2}),
    "vfucb": (LINEAR, {"kind": "vfucb", "partition": [2, 1, 1], "secure_aggregation": True}),
    "vfts": (LINEAR, {"kind": "vfts", "partition": [1, 3]}),
    "random": (USERS, {"kind": "random"}),
    "fclub": (USERS, {"kind": "fclub", "variant": "fclub-dc", "preset": "reference", "epsilon": 2.5}),
    "club": (USERS, {"kind": "club", "alpha_club": 0.3}),
    "sclub": (USERS, {"kind": "sclub"}),
    "user_linucb": (USERS, {"kind": "user_linucb", "beta_a": 0.1}),
    "mpc_epsilon_greedy": (DIGITS, {"kind": "mpc_epsilon_greedy", "partition": [2, 2, 2], "truncation": "wraps"}),
    "plaintext_mpc_epsilon_greedy": (DIGITS, {"kind": "plaintext_mpc_epsilon_greedy", "precision": 16}),
    "p2b": (POPULATION, {**P2B, "participation": 0.25, "omega": 0.5}),
    "joint_dp_linucb": (LINEAR, {"kind": "joint_dp_linucb", "epsilon": 0.5, "calibration": "paper"}),  # as stored
    "local_dp_linucb": (LINEAR, {"kind": "local_dp_linucb", "calibration": "analytic"}),
    "shuffle_dp_linucb": (LINEAR, {"kind": "shuffle_dp_linucb", "batch_size": 10, "calibration": "paper"}),
}
CASES = {f"environment {k}": v for k, v in ENVIRONMENTS.items()} | {f"policy {k}": v for k, v in POLICIES.items()}

# case: (the unit key of seed 3, config_hash of the run spec)
KEYS = {
    "environment linear_gaussian": ("b2bd705c39fd1e59280d3fd902f65f97", "a342f9a8243ee31a"),
    "environment digits": ("dd7974d51bfbca77e89039aef7f9a19c", "4119ddcd9997fc50"),
    "environment mnist": ("99fc17796b630d26f9c263b59614ced4", "f36a97859b5b7311"),
    "environment mnist5k": ("e3595a91e0ae292569c63eba23face9d", "2ce342bb4b7e0ea7"),
    "environment clustered_users": ("73ea5c13322258b55798eacdef4cb307", "205f8b834c7229f4"),
    "environment pooled_users": ("0695c0878c5b7f7f21c61f0174752f24", "f0eea8256b2d4865"),
    "environment kmeans_arms": ("83e3156b5c5d8991c0a8db817f4ed672", "e1326a3c780150d6"),
    "environment multilabel": ("dade093604f92a3fde941ae52202c4b4", "532b20661025e008"),
    "environment obd_replay": ("482afb426b4089fc8b7e4e6f05409cf6", "a345b58c403937b3"),
    "environment logged_replay": ("1c46cd7292f5e1a3fefac49795147519", "eef057dd31363222"),
    "environment p2b_synthetic": ("58672daf18e9cad6b0fcc7dbc6ca32e8", "a85d39e3d32fe65f"),
    "environment multilabel_population": ("fde0cd2b5ae7dc0c6c6e6d3c1bf560b2", "be3234f527c7aa8f"),
    "policy linucb": ("0b1f2dd97a93002fe7431cae5bf2dcaa", "528656fd0e15b349"),
    "policy lints": ("1ae821f4be28b67f38fe23456d5751f4", "0d2093de615d05c8"),
    "policy epsilon_greedy": ("6537b543b1f1ca1e0e267c0040d68c2f", "ef5446bce9485e5f"),
    "policy vfucb": ("db72dd69199656a655106fd6c815859f", "4863ada447df619a"),
    "policy vfts": ("9ecfb5a9128a6a95c31ec7e1f75955d3", "904a1369169f38f4"),
    "policy random": ("08ba0b77d1d72298d289f97a53664cb0", "7243113a5d4240fd"),
    "policy fclub": ("aba6603649f2c94c03642d4165a45929", "ae08ff00e16dd8e8"),
    "policy club": ("637dab1f0b47643f85fec0c7fc207631", "061edefee66dc29e"),
    "policy sclub": ("71f40064d0ca2f840545efc97ea19111", "c3224c80bad92e4f"),
    "policy user_linucb": ("5d535608e0737296a2529af569fc632a", "c7bda7b61c78f9d4"),
    "policy mpc_epsilon_greedy": ("ae8e4d70f3d191ec1671d05359b40987", "5588c308cf06aa1b"),
    "policy plaintext_mpc_epsilon_greedy": ("91677a64620ea2182654524a32a99c11", "9d2659a77b908bb9"),
    "policy p2b": ("49f669f4933ff4f2165a890606582f44", "eb54fa581d329983"),
    "policy joint_dp_linucb": ("8668102cd638305c974429abd5984a01", "32cb824ff54a6884"),
    "policy local_dp_linucb": ("65e0c84fb047e317071c619868ebac13", "481d3791ae7b7064"),
    "policy shuffle_dp_linucb": ("0f9960c644956752d5ef7b181d8ef115", "69c722ffee817604"),
}


def test_every_kind_is_pinned():
    assert set(ENVIRONMENTS) == set(by_kind(ENVIRONMENT_CONFIGS))
    assert set(POLICIES) == set(by_kind(POLICY_CONFIGS))
    assert set(KEYS) == set(CASES)


@pytest.fixture(scope="module")
def data_folder(tmp_path_factory) -> Path:
    return write_data(tmp_path_factory.mktemp("keys"))


def write_data(folder: Path) -> Path:
    """The data files of the cases, in ``folder``."""
    _mnist_folder(folder / "mnist")
    _mnist5k_file(folder / "mnist_5k.csv")
    _matrix(folder / "matrix.npy")
    _log(folder / "log.npz")
    return folder


def _filled(value, folder: Path, partition: list[int]):
    if isinstance(value, dict):
        return {key: _filled(item, folder, partition) for key, item in value.items()}
    if value == "<obd>":
        return partition
    return value.replace("<tmp>", str(folder)) if isinstance(value, str) else value


def run_keys(case: str, folder: Path) -> tuple[str, str]:
    """(store key of the seed-3 unit, ``config_hash`` of the run spec) of ``case``, data files written in ``folder``."""
    environment, policy = CASES[case]
    partition = []
    if case == "environment obd_replay":
        partition = list(parse_config(_experiment(environment, {"kind": "random"})).environment.partition)
    config = parse_config(_experiment(_filled(environment, folder, partition), _filled(policy, folder, partition)))
    task = run_tasks_of(config)[1]
    assert task.params["seed"] == 3
    return _key(task, _roots(folder)), config_hash(_portable(config.run_spec(0), _roots(folder)))


@pytest.mark.parametrize("case", list(CASES))
def test_a_run_keeps_its_store_key(case, data_folder):
    if case == "environment obd_replay" and not HAS_SHARED:
        pytest.skip("the offline data (../shared/data) is not there")
    assert run_keys(case, data_folder) == KEYS[case]


def _experiment(environment: dict, policy: dict) -> dict:
    return {"name": "keys", "horizon": 40, "seeds": [1, 3], "series_points": 10, "environment": environment,
            "policies": [policy]}  # fmt: skip


def test_a_file_identity_is_its_resolved_path_and_the_sha256_of_its_bytes(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(b"privbandits\n")
    assert file_identity(path) == {"path": str(path.resolve()), "sha256": hashlib.sha256(b"privbandits\n").hexdigest()}


# -- every unit of every reproduction at its default options ---------------------------------------------------
READS_SHARED = {  # reproductions whose default units read ../shared/data (their grid differs without it)
    "example-vfucb-obd-replay", "fclub-fig2", "fclub-fig4", "fclub-table3", "p2b-fig7", "privacy-map", "vertical-obd",
}  # fmt: skip

# name: (units, the first unit's key, SHA-256 of every unit's key, one a line, 16 hex digits)
UNITS = {
    "example-fclub-vs-club": (9, "55ea0c998050be7300342aea3839c822", "f146ff4b44546eaa"),
    "example-mpc-vs-twin-digits": (8, "10d6ec0cdc691cd09877c51e2aa4d494", "78a8e1eba0aa65f2"),
    "example-p2b-synthetic": (6, "bc967d0854e14838010bf0f6375ed074", "71120deb66d1751a"),
    "example-vfucb-obd-replay": (15, "abcc56a18e9338bbfb10012175f0225f", "422a4ac27b11d20f"),
    "fclub-fig2": (270, "03c2241fd9c80d75f0e00b653ac6eb8c", "407b20cefc884d77"),
    "fclub-fig3": (440, "c7fcdf3412b440249512277207769cfa", "d95769ec4b4e7063"),
    "fclub-fig4": (120, "997b70113b8545a1c3eff64a96c3e3da", "a8625368cd3f93d4"),
    "fclub-reference-gap": (200, "e498c373f4db1b92f6a8c2b0b2ef04a0", "b89dcbded5cb36b5"),
    "fclub-table3": (1, "61690d09de75066acbb3b46bcadbeb58", "9499e3fb180e1f8e"),
    "mpc-fig2": (16, "58be8497816ea76e97d810bd8cb5e13e", "8c6f7c62818ed8ca"),
    # mpc-fig3 and mpc-fig6 key ε = |A|·exp(−η) (math.exp): the same on every correctly rounding libm
    "mpc-fig3": (53, "028f83c3c8a1c6cf4b8257659ac02e1c", "2a7902340902042c"),
    "mpc-fig4": (1, "e13a427644e2ac4d8ea407541b760fee", "2d853d7b4ee5bd95"),
    "mpc-fig5": (1, "82a92024d784a469f7b1aa3ed94b1190", "35d9aa50d85c6783"),
    "mpc-fig6": (111, "7ab940d258969dffbe848a21c2226ffe", "75517239cc3a683f"),
    "mpc-fig7": (200, "da51f35f57e096f874cd017e807e7ecc", "a8bf47f47964afae"),
    "mpc-fig8": (43, "3abfc2b93fef9163607e9e94a68005a5", "54b638a8001a7d01"),
    "mpc-fig9": (15, "557d2fd474ff2c19492d303d4cbf1f7e", "4654ba076b52255b"),
    "mpc-table1": (2, "f4f6d03a14ff3b0ca2885ba67f81d930", "610a10f8348e676c"),
    "p2b-fig3": (1, "426bdf1d1b48c9de83722d0979936f75", "11c4d68d0b821831"),
    "p2b-fig4": (21, "ef923dbf5d279b2c9654d801a69b8790", "5ee8ca72ed145648"),
    "p2b-fig5": (15, "93ff4acdd5201e033b1c8308efc93a61", "4627f2360649d7e3"),
    "p2b-fig5-reference": (15, "a4d5192e35c39b27ce582d2e9368be9c", "597a8faf53574e70"),
    "p2b-fig6": (42, "a0a710e29ca068a5e75258812082b019", "f1d3faffe12978f0"),
    "p2b-fig6-reference": (42, "ffabcca0393751b638e54a69d2b27725", "c9bca1c177fafa5b"),
    "p2b-fig7": (63, "ca681985cbfb93395164f4bf24cef9ba", "40ba0eaa03f6dd9d"),
    "privacy-map": (436, "db005463a929a2274d49a5c09f7388ea", "7f1d692a32eb03db"),
    "vertical-audit": (1, "22bb8e3dab75186ef63b281916ecc71d", "800affd67da97d4c"),
    "vertical-fig4": (30, "2928dc9118be1938e5517d940c5a4f8d", "a0778a4a1932e8f3"),
    "vertical-fig5": (35, "a530324738056f16c4342e4c2a863cc9", "6a9585e596b281b1"),
    "vertical-fig6": (30, "54dfb32a5cbc78a4900710d365fcdaa7", "515f89bb22e6808e"),
    "vertical-obd": (30, "9cb0036b79d34541099ff63561babfa2", "0fac9eeaa34d0fca"),
    "vertical-synthetic-demo": (20, "a3170be3a5ac5f5f8562acadbda20ac5", "7cc206dba05cba87"),
}


def _reference_checkout(folder: Path) -> Path:
    """A stand-in for the FCLUB reference checkout: only the file the gap reproduction reads (40 users, d = 10)."""
    path = folder / "raw_data" / "synthetic_data" / "10_theta.npy"
    path.parent.mkdir(parents=True)
    path.write_bytes(_npy((np.arange(400).reshape(40, 10) % 7) / 7))
    return folder


def _catalog() -> dict:
    from privbandits.experiments.catalog import REPRODUCTIONS, shipped_configs

    return REPRODUCTIONS | shipped_configs()


def test_every_reproduction_is_pinned():
    assert set(UNITS) == set(_catalog())


# name: (labels of the units added after UNITS was pinned, (their units, first key, digest)): the pinned units keep
# their keys (stored runs are reused), the added ones are new units
ADDED = {
    "privacy-map": (  # issue 47: the sqrt factorization beside the tree, shuffle points at an amplifying batch (the
        # factorization's keys name its mechanism, FACTORIZATION_KEY: the banded factor with its band chosen)
        re.compile(r"sqrt factorization|batch (?!100:)\d+"),
        (180, "2f0c88723d92fac1f522dbbf745b4472", "6d41ba04a57c2f47"),
    ),
}


def unit_keys(name: str, folder: Path, added: bool = False) -> tuple[int, str | None, str]:
    """(units, the first one's store key, digest of every unit's key) of reproduction ``name`` at its defaults (the
    units pinned in UNITS; ``added``: those added since, :data:`ADDED`)."""
    reproduction = _catalog()[name]
    raw = {"reference_dir": str(_reference_checkout(folder / "reference"))} if name == "fclub-reference-gap" else {}
    pattern = ADDED[name][0] if name in ADDED else None
    tasks = [task for task in reproduction.tasks(reproduction.parse(raw))
             if (pattern is not None and pattern.search(task.label) is not None) == added]  # fmt: skip
    keys = [_key(task, _roots(folder)) for task in tasks]
    return len(keys), keys[0] if keys else None, hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(_catalog()))
def test_a_reproduction_keeps_its_unit_keys(name, tmp_path):
    if name in READS_SHARED and not HAS_SHARED:
        pytest.skip("the offline data (../shared/data) is not there")
    assert unit_keys(name, tmp_path) == UNITS[name]
    if name in ADDED:
        assert unit_keys(name, tmp_path, added=True) == ADDED[name][1]
