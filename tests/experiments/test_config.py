"""Config validation: every bad config gets one exact, readable message."""

from __future__ import annotations

import textwrap

import pytest

from privbandits.experiments import ConfigError, config_hash, load_config, parse_config


def _error(data: dict) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(data, source="cfg.toml")
    return str(info.value)


def test_valid_config_fills_defaults(config_data):
    config = parse_config(config_data)
    assert config.policies[0].layout == "shared" and config.policies[0].refresh_every == 1000
    assert config.environment.noise_variance == 0.05
    assert [p.display_label for p in config.policies] == ["ucb", "ts"]


BAD_CONFIGS = [
    (
        lambda d: d["environment"].update(dimm=3),
        "environment.dimm: unknown key; allowed keys: kind, dim, n_arms, context_variance, "
        "theta_variance, noise_variance",
    ),
    (
        lambda d: d.update(colour="red"),
        "colour: unknown key; allowed keys: name, description, horizon, seeds, series_points, environment, policies",
    ),
    (
        lambda d: d["environment"].update(kind="criteo"),
        "environment.kind: must be one of 'linear_gaussian', 'digits', 'mnist', 'mnist5k', 'clustered_users', "
        "'pooled_users', 'kmeans_arms', 'multilabel', 'obd_replay', 'logged_replay', 'p2b_synthetic', "
        "'multilabel_population' (got 'criteo')",
    ),
    (
        lambda d: d["policies"][1].update(kind="ucb"),
        "policies[1].kind: must be one of 'linucb', 'lints', 'epsilon_greedy', 'vfucb', 'vfts', 'random', 'fclub', "
        "'club', 'sclub', 'user_linucb', 'mpc_epsilon_greedy', 'plaintext_mpc_epsilon_greedy', 'p2b', "
        "'joint_dp_linucb', 'local_dp_linucb', 'shuffle_dp_linucb' (got 'ucb')",
    ),
    (lambda d: d["policies"][0].update(alpha=-1), "policies[0].alpha: must be >= 0.0 (got -1)"),
    (
        lambda d: d["policies"][0].update(layout="shard"),
        "policies[0].layout: must be one of 'shared' or 'disjoint' (got 'shard')",
    ),
    (lambda d: d.update(horizon="ten"), "horizon: must be an integer (got 'ten')"),
    (lambda d: d.update(horizon=0), "horizon: must be >= 1 (got 0)"),
    (lambda d: d["environment"].update(n_arms=2.5), "environment.n_arms: must be an integer (got 2.5)"),
    (lambda d: d["policies"][1].update(v="big"), "policies[1].v: must be a number (got 'big')"),
    (lambda d: d.pop("seeds"), "seeds: required key is missing"),
    (lambda d: d.update(seeds=[1, 1]), "seeds: must be distinct"),
    (lambda d: d.update(policies=[]), "policies: must have at least 1 item(s) (got 0)"),
    (
        lambda d: d["policies"].append({"kind": "linucb", "label": "ucb"}),
        "policies: labels must be unique; repeated: ucb (set 'label')",
    ),
    (lambda d: d.update(name="My Run"), "name: must match ^[a-z0-9][a-z0-9_-]*$ (got 'My Run')"),
    (
        lambda d: d["policies"][0].update(visible_features=9),
        "policies[0].visible_features: must be <= the environment's context dimension 8 (got 9)",
    ),
    (
        lambda d: d.update(environment={"kind": "digits"}),
        "policies[0].layout: 'shared' needs one context per arm, but environment 'digits' gives "
        "one context per round; use 'disjoint'",
    ),
    (
        lambda d: d["policies"][0].update(epsilon=0.1),
        "policies[0].epsilon: unknown key; allowed keys: label, visible_features, reg, "
        "refresh_every, tie_break, tie_tolerance, kind, layout, alpha",
    ),
    (
        lambda d: d["policies"].append({"kind": "vfucb", "partition": [4, 3]}),
        "policies[2].partition: block sizes must sum to the environment's context dimension 8 (got 7)",
    ),
    (
        lambda d: d["policies"].append({"kind": "vfts", "partition": [4, 4], "secure_aggregation": True}),
        "policies[2]: secure_aggregation needs at least 2 passive parties (3 or more partition blocks)",
    ),
    (
        lambda d: d["policies"].append({"kind": "vfucb", "partition": [4, 4], "visible_features": 4}),
        "policies[2].visible_features: not used by vertical protocols (every party's block is used); for a "
        "partial baseline use kind 'linucb' or 'lints' with visible_features",
    ),
    (
        lambda d: d["policies"].append({"kind": "vfucb", "partition": [8]}),
        "policies[2].partition: must have at least 2 item(s) (got 1)",
    ),
    (
        lambda d: d["policies"].append({"kind": "vfts", "partition": [4, 4], "mask_source": "dice"}),
        "policies[2].mask_source: must be one of 'seeded' or 'os' (got 'dice')",
    ),
]


@pytest.mark.parametrize(("mutate", "message"), BAD_CONFIGS)
def test_bad_config_message_names_key_and_allowed_values(config_data, mutate, message):
    mutate(config_data)
    assert _error(config_data) == f"cfg.toml is invalid:\n  {message}"


def test_several_problems_are_all_listed(config_data):
    config_data["horizon"] = -5
    config_data["policies"][0]["alpha"] = -1
    assert _error(config_data) == (
        "cfg.toml is invalid:\n  horizon: must be >= 1 (got -5)\n  policies[0].alpha: must be >= 0.0 (got -1)"
    )


def test_load_config_reports_missing_file_and_bad_toml(tmp_path):
    with pytest.raises(ConfigError, match="config file not found: .*nope.toml"):
        load_config(tmp_path / "nope.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("name = \n")
    with pytest.raises(ConfigError, match=r"broken.toml is not valid TOML: Invalid value \(at line 1"):
        load_config(broken)


def test_load_config_from_toml(tmp_path):
    path = tmp_path / "ok.toml"
    path.write_text(
        textwrap.dedent(
            """
            name = "ok"
            horizon = 10
            seeds = [3]
            [environment]
            kind = "digits"
            pca_components = 10
            [[policies]]
            kind = "epsilon_greedy"
            epsilon = 0.2
            """
        )
    )
    config = load_config(path)
    assert config.environment.context_dim == 10 and config.policies[0].layout == "disjoint"


def test_config_hash_is_stable_and_sensitive(config_data):
    config = parse_config(config_data)
    spec = config.run_spec(0)
    assert config_hash(spec) == config_hash(dict(reversed(list(spec.items()))))
    config_data["policies"][0]["alpha"] = 0.6
    assert config_hash(parse_config(config_data).run_spec(0)) != config_hash(spec)
    # the other policy's runs keep their key when one policy changes
    assert config_hash(parse_config(config_data).run_spec(1)) == config_hash(config.run_spec(1))
