"""Every data path is resolved in one place, ``privbandits.datasets.cache`` (issue 30): the data cache
(``$PRIVBANDITS_DATA``) and the offline data sets (``$PRIVBANDITS_SHARED_DATA``, else ``../shared/data`` beside
a source checkout); no other module builds a path from its own location."""

from __future__ import annotations

import re

import numpy as np
import pytest
from project_paths import ROOT

from privbandits.datasets import cache
from privbandits.datasets.movielens import default_fclub_data_path
from privbandits.datasets.obd import default_obd_path
from privbandits.experiments.config import ConfigError, parse_config


def test_a_source_checkout_reads_shared_data_beside_it(monkeypatch):
    monkeypatch.delenv(cache.SHARED_ENV, raising=False)
    assert cache.shared_data_dir() == ROOT.parent / "shared" / "data"


def test_the_variable_points_every_default_elsewhere(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.SHARED_ENV, str(tmp_path))
    assert cache.shared_data_dir() == tmp_path
    assert default_obd_path() is None and default_fclub_data_path() is None and cache.shared_data("obd") is None
    (tmp_path / "obd" / "random" / "all").mkdir(parents=True)
    (tmp_path / "fclub").mkdir()
    np.save(tmp_path / "fclub" / "ml_1000user_d10.npy", np.eye(10)[np.arange(60) % 10])
    assert default_obd_path() == tmp_path / "obd" / "random" / "all"
    assert default_fclub_data_path() == tmp_path / "fclub"
    config = parse_config({
        "name": "paths", "horizon": 5, "seeds": [0],
        "environment": {"kind": "pooled_users", "source": "reference_vectors", "n_users": 20, "n_servers": 2},
        "policies": [{"kind": "random"}],
    })  # fmt: skip
    assert config.environment.path == str(tmp_path / "fclub" / "ml_1000user_d10.npy")


def test_a_missing_default_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.SHARED_ENV, str(tmp_path / "none"))
    with pytest.raises(ConfigError, match="none/fclub/ml_500user_500item.npy"):
        parse_config({"name": "paths", "horizon": 5, "seeds": [0], "environment": {"kind": "pooled_users"},
                      "policies": [{"kind": "random"}]})  # fmt: skip


def test_no_other_module_builds_a_data_path_from_its_own_location():
    pattern = re.compile(r'parents\[\d\]\s*/\s*"shared"|"shared"\s*/\s*"data"')
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == ["src/privbandits/datasets/cache.py"]
