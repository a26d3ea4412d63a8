"""The ``mnist5k`` environment kind: real MNIST-5k from the data cache as a classification bandit, from TOML
and Python, split and preprocessed exactly as the MPC reproductions' loader does, keyed by the file's SHA-256,
and a one-line error naming the fetch command when the cache lacks it (tiny generated fixture)."""

from __future__ import annotations

import numpy as np
import pytest
from mnist5k_fixture import install, repin, write_mnist5k

from privbandits.datasets import cache
from privbandits.datasets.mnist5k import mnist5k_bandit
from privbandits.experiments.config import (
    ConfigError,
    ExperimentConfig,
    MNIST5kEnvConfig,
    PlaintextMPCEpsilonGreedyConfig,
    config_hash,
    load_config,
    parse_config,
)
from privbandits.experiments.runner import run_single, run_task
from privbandits.experiments.sources import build_source

TOML = """
name = "mnist5k-tiny"
horizon = 30
seeds = [0]
series_points = 10

[environment]
kind = "mnist5k"
pca_components = 5

[[policies]]
kind = "linucb"
layout = "disjoint"

[[policies]]
kind = "plaintext_mpc_epsilon_greedy"
epsilon = 0.1
"""


@pytest.fixture
def mnist5k(tmp_path, monkeypatch):
    return install(tmp_path / "cache", monkeypatch)


def _config(**environment) -> dict:
    return {
        "name": "m5k",
        "horizon": 30,
        "seeds": [0],
        "series_points": 10,
        "environment": {"kind": "mnist5k", "pca_components": 5, **environment},
        "policies": [{"kind": "plaintext_mpc_epsilon_greedy", "epsilon": 0.1}],
    }


def test_from_toml_and_python_it_runs_on_the_cached_file(mnist5k, tmp_path):
    path = tmp_path / "m5k.toml"
    path.write_text(TOML)
    config = load_config(path)
    assert config.environment.path == str(mnist5k.resolve()) and config.environment.context_dim == 5
    spec = config.run_spec(0)["environment"]
    pinned = cache.SOURCES["mnist5k"].members["mnist_5k.csv.gz"][1]
    assert spec["path"] == {"path": str(mnist5k.resolve()), "sha256": pinned}
    for index in range(2):
        record = run_single(config, index, 0)
        assert record.horizon == 30 and 0 <= record.final_reward <= 30
    environment = MNIST5kEnvConfig(kind="mnist5k", pca_components=5)
    python = ExperimentConfig(
        name="m5k",
        horizon=30,
        seeds=[0],
        series_points=10,
        environment=environment,
        policies=[PlaintextMPCEpsilonGreedyConfig(kind="plaintext_mpc_epsilon_greedy", epsilon=0.1)],
    )
    for part in ("environment", "policy", "horizon"):
        assert python.run_spec(0)[part] == config.run_spec(1)[part]


def test_the_splits_are_the_mpc_loaders_own(mnist5k):
    for split, part in (("train", "train"), ("test", "test")):
        config = parse_config(_config(split=split))
        env = build_source(config.environment).env
        expected = getattr(mnist5k_bandit(mnist5k, held_out=0.2, seed=0, components=5), part)
        np.testing.assert_array_equal(env.features, expected.features)
        np.testing.assert_array_equal(env.indicator.argmax(axis=1), expected.labels)
    assert build_source(parse_config(_config()).environment).env.n_examples == 64  # 80 rows, 16 held out
    other = build_source(parse_config(_config(split_seed=1, held_out=0.5)).environment).env
    assert other.n_examples == 40


def test_an_absent_data_set_is_one_line_naming_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "empty"))
    with pytest.raises(ConfigError) as info:
        parse_config(_config(), source="cfg.toml")
    assert str(info.value).split("\n")[1:] == [
        "  environment.path: MNIST-5k (real MNIST, 5,000 images) is not in the data cache; run "
        "`privbandits data fetch mnist5k` first, or give path"
    ]


def test_an_explicit_file_needs_no_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "empty"))
    path = tmp_path / "mine.csv.gz"
    write_mnist5k(path, seed=2)
    config = parse_config(_config(path=str(path)))
    assert run_single(config, 0, 0).horizon == 30
    with pytest.raises(ConfigError, match="environment.path: no such file"):
        parse_config(_config(path=str(tmp_path / "nope.csv.gz")))


def test_the_file_identity_keys_the_runs_and_a_changed_file_is_refused(mnist5k, monkeypatch):
    config = parse_config(_config())
    spec = config.run_spec(0)
    write_mnist5k(mnist5k, seed=1)  # another file in the same place
    with pytest.raises(ConfigError, match="changed since this run was planned"):
        run_task(spec, 0)
    repin(monkeypatch, mnist5k.parent)
    assert config_hash(parse_config(_config()).run_spec(0)) != config_hash(spec)
    mnist5k.write_bytes(mnist5k.read_bytes() + b"\n")  # no longer the pinned file: refused, both checksums named
    with pytest.raises(ConfigError, match=r"environment.path: mnist5k file .* is corrupt: SHA-256 expected .*, got"):
        parse_config(_config())
