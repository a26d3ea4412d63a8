"""The example configs in configs/examples/ run through the experiment model (at tiny sizes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from project_paths import OBD_SAMPLE, ROOT

from privbandits.experiments.catalog import find
from privbandits.experiments.reproduction import run
from privbandits.experiments.store import ResultsStore, RunRecord

EXAMPLES = ROOT / "configs" / "examples"

SMALL = {
    "fclub-vs-club.toml": {"horizon": "300", "seeds": "0,1"},
    "mpc-vs-twin-digits.toml": {"horizon": "15", "seeds": "0"},
    "p2b-synthetic.toml": {
        "horizon": "4",
        "seeds": "0",
        "environment.n_users": "300",
        "environment.dim": "4",
        "policies.0.n_codes": "16",
        "policies.1.n_codes": "16",
        "policies.0.threshold": "2",
    },
    "vfucb-obd-replay.toml": {"horizon": "400", "seeds": "0"},
}


def test_every_example_is_covered():
    assert sorted(path.name for path in EXAMPLES.glob("*.toml")) == sorted(SMALL)


def _run(name: str, tmp_path: Path):
    reproduction = find(str(EXAMPLES / name))
    config = reproduction.parse(SMALL[name])
    with ResultsStore(tmp_path / "results.sqlite") as store:
        summary, report = run(reproduction, config, store, tmp_path / "out", progress=False)
        again, _ = run(reproduction, config, store, tmp_path / "out", progress=False)
        records = [RunRecord.from_result(unit.result) for unit in store.units(summary.computed).values()]
    assert len(summary.computed) == len(config.policies) * len(config.seeds)
    assert again.computed == []  # stored: nothing is recomputed
    return config, records, report


def _by_label(records):
    return {r.label: r for r in records}


def test_fclub_versus_club(tmp_path):
    config, records, report = _run("fclub-vs-club.toml", tmp_path)
    runs = [r for r in records if r.seed == 0]
    by = _by_label(runs)
    fclub, club = by["CDP-FCLUB-DC (ε = 1)"], by["CLUB (per local server)"]
    assert fclub.metrics["communication"] > 0 and fclub.metrics["bytes"] > 0
    assert club.metrics["communication"] == 0
    assert all(len(r.cumulative_regret) and r.final_regret > 0 for r in runs)
    assert any("protocol metrics" in title for title in report.tables)
    assert {p.name for p in report.figures} == {f"{config.name}-regret.png", f"{config.name}-reward.png"}


def test_private_epsilon_greedy_versus_twin(tmp_path):
    _, records, report = _run("mpc-vs-twin-digits.toml", tmp_path)
    by = _by_label(records)
    private, twin = by["private ε-greedy (MPC, 2 parties)"], by["plaintext twin"]
    # same exploration draws: the twin picks the private learner's arms (no fixed-point near-ties in 15 rounds)
    assert private.actions_digest == twin.actions_digest
    assert private.communication["round_bytes"] > 0 and twin.communication is None
    assert private.metrics["invalid_openings"] == 0


def test_p2b_population(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVBANDITS_CACHE", str(tmp_path / "cache"))
    config, records, report = _run("p2b-synthetic.toml", tmp_path)
    for record in records:
        assert {"cold", "warm_non_private", "warm_private", "epsilon", "released"} <= set(record.metrics)
        assert record.metrics["late_users"] == 90  # 30 % of 300
        assert len(record.cumulative_reward) == 0
    table = next(rows for title, rows in report.tables.items() if "protocol metrics" in title)
    assert table[0][:5] == ["policy", "seeds", "cold", "warm_non_private", "warm_private"]
    assert report.figures == []  # a population run has no per-round series


@pytest.mark.skipif(not OBD_SAMPLE.is_dir(), reason="the OBD sample is not in ../shared/data")
def test_vfucb_obd_replay(tmp_path):
    config, records, report = _run("vfucb-obd-replay.toml", tmp_path)
    for record in records:
        assert 0 < record.metrics["matched"] < 400
        assert len(record.cumulative_regret) == 0 and record.final_reward == pytest.approx(
            record.metrics["ctr"] * record.metrics["matched"]
        )
        identity = record.run_spec["environment"]["path"]
        assert identity["path"] == str(OBD_SAMPLE.resolve()) and len(identity["sha256"]) == 64
    assert [p.name for p in report.figures] == [f"{config.name}-reward.png"]


def test_example_overrides_are_typed_by_the_schema():
    from privbandits.experiments.overrides import OptionError

    reproduction = find(str(EXAMPLES / "fclub-vs-club.toml"))
    assert reproduction.parse({"policies.0.epsilon": "2"}).policies[0].epsilon == 2.0
    for raw, message in [
        ({"environment.dim": "10.0"}, "environment.dim: must be an integer (got 10.0)"),
        ({"policies.0.private": "1"}, "policies[0].private: must be a boolean (got 1)"),
        ({"policies.1.kind": "fclub2"}, "policies[1].kind: must be one of"),
        ({"environment.kind": "digits"}, "environment.construction: unknown key; allowed keys: kind, pca_components"),
        ({"policies.0.variant": "club"}, "policies[0].variant: must be one of 'cdp-fclub-dc', 'fclub-dc', 'fclub',"),
    ]:
        with pytest.raises(OptionError) as info:
            reproduction.parse(raw)
        assert str(info.value).startswith(message) and "\n" not in str(info.value)
