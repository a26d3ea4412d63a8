"""The privacy–utility map (issue 16 item 2): its grid runs at tiny options, its report builds from the
store alone, every point carries its semantics, and a changed option is a different unit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privbandits.datasets import cache
from privbandits.experiments import reproduction
from privbandits.experiments.catalog import REPRODUCTIONS
from privbandits.experiments.store import ResultsStore
from privbandits.papers.privacy_map import environments as map_environments
from privbandits.papers.privacy_map.environments import environments
from privbandits.papers.privacy_map.report import semantics_rows
from privbandits.papers.privacy_map.semantics import SEMANTICS
from privbandits.papers.privacy_map.systems import candidates, eta_of, p2b_epsilon, placed

MAP = REPRODUCTIONS["privacy-map"]
TINY = {
    "horizon": "20",
    "seeds": "0,1",
    "obd_events": "60",
    "p2b_users": "100",
    "p2b_codes": "8",
    "epsilons": "1,10",
    "explorations": "0.1",
    "participations": "0.5",
}


def _options(**changes: str):
    return MAP.parse({**TINY, **changes})


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_tiny_grid_runs_and_the_report_builds_from_the_store_alone(tmp_path):
    options = _options()
    store = ResultsStore(tmp_path / "r.sqlite")
    summary, first = reproduction.run(MAP, options, store, tmp_path / "run", jobs=1, progress=False)
    assert len(summary.computed) == len(MAP.tasks(options)) > 0
    rebuilt = reproduction.report(MAP, options, ResultsStore(tmp_path / "r.sqlite"), tmp_path / "report")
    assert rebuilt.markdown() == first.markdown()
    assert (tmp_path / "report" / "privacy-map.png").is_file()
    text = rebuilt.markdown()
    for section in (
        "Semantics of every point",
        "Best point of each privacy notion at each ε level",
        "Joint DP: the square-root factorization against the tree at equal ε",
        "Systems left out",
    ):
        assert section in text
    for claim in rebuilt.claims:
        assert claim.verdict == "reproduced", claim


def test_every_point_has_its_semantics_row():
    options = _options()
    panels = []
    for env in environments(options)[0]:
        for point in candidates(env, options):
            assert point.model in SEMANTICS, point.label
        panels.append(placed(env, options)[0])
    systems = {row[0] for row in _semantics_table(options)[1:]}
    for kept in panels:
        for point in kept:
            assert point.system in systems, point.label


def _semantics_table(options):
    """The report's semantics table for points placed at ``options`` (summaries stubbed: only points matter)."""
    from privbandits.papers.privacy_map.report import Panel
    from privbandits.papers.privacy_map.summary import PointSummary

    panels = []
    for env in environments(options)[0]:
        kept, refused = placed(env, options)
        rows = [PointSummary(point, 0.0, 0.0, 1, 0.0, 0.0, "none", ()) for point in kept]
        panels.append(Panel(env, rows, refused))
    return semantics_rows(panels)


def test_each_semantics_row_names_whom_from_whom_span_and_trust():
    for model, row in SEMANTICS.items():
        assert all(value.strip() for value in vars(row).values()), model


def test_systems_that_cannot_run_are_left_out_with_the_config_checks_reason():
    options = _options()
    by_key = {env.key: env for env in environments(options)[0]}
    kept, refused = placed(by_key["classification"], options)
    assert "one context per arm" in refused["Joint-DP LinUCB"]
    assert "needs an environment with users" in refused["CDP-FCLUB-DC"]
    assert {point.system for point in kept} >= {"LinUCB (non-private)", "MPC ε-greedy (plaintext twin)"}
    kept, refused = placed(by_key["linear_gaussian"], options)
    assert "population" in refused["P2B (warm, private)"]
    assert {point.model for point in kept} >= {"random", "none", "o3m", "o3m_sa", "joint_dp", "local_dp"}


def test_points_sit_at_each_systems_stated_epsilon():
    options = _options()
    env = {env.key: env for env in environments(options)[0]}
    digits = {point.label: point for point in placed(env["classification"], options)[0]}
    assert digits["MPC ε-greedy twin η=4.61"].epsilon == pytest.approx(eta_of(0.1)) == pytest.approx(math.log(100))
    population = {point.label: point for point in placed(env["p2b_population"], options)[0]}
    assert population["P2B p=0.5"].epsilon == pytest.approx(p2b_epsilon(0.5)) == pytest.approx(math.log(2))
    assert population["cold start"].epsilon == 0 and population["cold start"].runs_of == "P2B p=0.5"
    users = {point.label: point for point in placed(env["clustered_users"], options)[0]}
    assert users["CDP-FCLUB-DC ε=10"].epsilon == 10 and users["O3M VFUCB"].epsilon == math.inf


def test_a_changed_option_changes_the_task_keys_and_an_added_epsilon_only_adds_units():
    base = {task.key for task in MAP.tasks(_options())}
    assert base.isdisjoint(
        task.key for task in MAP.tasks(_options(horizon="21")) if "obd" not in task.label and "p2b" not in task.label
    )
    dp = {task.key for task in MAP.tasks(_options(delta="1e-6")) if "DP LinUCB" in task.label}
    assert dp.isdisjoint(base)
    more = {task.key for task in MAP.tasks(_options(epsilons="1,10,0.5"))}
    assert base < more
    assert len(base) == len(MAP.tasks(_options()))


def test_obd_is_skipped_with_a_note_when_its_folder_is_absent(monkeypatch):
    import privbandits.datasets.obd as obd

    monkeypatch.setattr(obd, "default_obd_path", lambda: None)
    built, notes = environments(_options())
    assert "obd" not in {env.key for env in built}
    assert any("OBD replay skipped" in note for note in notes)
    assert map_environments.obd_folder(_options()) is None


def test_two_runs_into_fresh_stores_store_the_same_results(tmp_path):
    options = _options(environments="linear_gaussian,clustered_users,classification")
    stored = []
    for name in ("a", "b"):
        store = ResultsStore(tmp_path / f"{name}.sqlite")
        reproduction.run(MAP, options, store, tmp_path / name, jobs=1, progress=False)
        stored.append(store.results(MAP.tasks(options)))
    first, second = stored
    assert first.keys() == second.keys() and first
    for key, result in first.items():
        other = second[key]
        assert result["actions_digest"] == other["actions_digest"]
        assert result["cumulative_reward"] == other["cumulative_reward"]
        assert result.get("metrics") == other.get("metrics")


def _write_idx(path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


def test_an_mnist_folder_replaces_digits_in_the_classification_panel(tmp_path):
    folder = tmp_path / "mnist"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for stem, n in (("train", 40), ("t10k", 10)):
        _write_idx(folder / f"{stem}-images-idx3-ubyte", rng.integers(0, 256, (n, 6, 6)))
        _write_idx(folder / f"{stem}-labels-idx1-ubyte", np.arange(n) % 10)
    options = _options(mnist=str(folder), environments="classification")
    (panel,), _ = environments(options)
    assert panel.environment["kind"] == "mnist" and "MNIST" in panel.title
    digits = {task.key for task in MAP.tasks(_options(environments="classification"))}
    assert digits.isdisjoint(task.key for task in MAP.tasks(options))


# -- the classification panel's data (issue 16: real MNIST-5k from the data cache) -------------------------------
DIGITS_KEYS = {
    "classification | Uniform random | seed 0": "c6a8bb1b473fbe89647847866f6376e6",
    "classification | LinUCB (non-private) | seed 0": "07bec1e2a0bebd5414ff694b4a784826",
}
"""Keys of digits units at the tiny options before the ``data`` option existed: stored digits runs stay valid."""


def _classification_keys(**changes: str) -> dict[str, str]:
    return {task.label: task.key for task in MAP.tasks(_options(environments="classification", **changes))}


def test_data_is_resolved_when_the_options_are_parsed(tmp_path):
    from privbandits.experiments.overrides import OptionError

    assert _options().data == "digits"  # the tests' data cache is empty
    keys = _classification_keys()
    assert {label: keys[label] for label in DIGITS_KEYS} == DIGITS_KEYS
    assert _classification_keys(data="digits") == keys
    with pytest.raises(OptionError, match=r"option data: mnist5k is not in the data cache; run `privbandits data "
                       r"fetch mnist5k` first"):  # fmt: skip
        _options(data="mnist5k")
    with pytest.raises(OptionError, match="reads the IDX folder given as mnist=<folder>, or the data cache's MNIST"):
        _options(data="mnist")
    folder = tmp_path / "mnist"
    folder.mkdir()
    for stem, n in (("train", 40), ("t10k", 10)):
        _write_idx(folder / f"{stem}-images-idx3-ubyte", np.zeros((n, 6, 6)))
        _write_idx(folder / f"{stem}-labels-idx1-ubyte", np.arange(n) % 10)
    assert _options(mnist=str(folder)).data == "mnist"
    with pytest.raises(OptionError, match="mnist=<folder> is read only with data = 'mnist' or 'auto', not 'digits'"):
        _options(mnist=str(folder), data="digits")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_digits_panel_says_it_is_the_stand_in(tmp_path):
    options = _options(environments="classification")
    with ResultsStore(tmp_path / "r.sqlite") as store:
        _, paper = reproduction.run(MAP, options, store, tmp_path / "out", jobs=1, progress=False)
    note = next(note for note in paper.notes if note.startswith("DATA of the classification panel"))
    assert "(data=digits): STAND-IN" in note and "privbandits data fetch mnist5k" in note
    assert "Digits as classification (MNIST stand-in" in paper.markdown()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_cached_mnist5k_is_what_auto_runs_and_the_report_names_it(tmp_path, monkeypatch):
    from mnist5k_fixture import install, repin, write_mnist5k

    path = install(tmp_path / "cache", monkeypatch)
    options = _options(environments="classification")
    assert options.data == "mnist5k"
    (panel,), _ = environments(options)
    assert panel.environment == {"kind": "mnist5k", "pca_components": 20} and "MNIST-5k" in panel.title
    assert panel.experiment == "privacy-map-mnist5k"
    with ResultsStore(tmp_path / "r.sqlite") as store:
        summary, paper = reproduction.run(MAP, options, store, tmp_path / "out", jobs=1, progress=False)
        assert len(summary.computed) == len(MAP.tasks(options)) == 7
        assert store.recall("privacy-map")["data"] == "mnist5k"  # the stored invocation names the data that ran
        recalled = reproduction.resolve_options(MAP, {}, store)
        assert reproduction.report(MAP, recalled, store, tmp_path / "again").markdown() == paper.markdown()
    text = paper.markdown()
    assert "MNIST-5k as classification (real MNIST" in text and "STAND-IN" not in text
    note = next(note for note in paper.notes if note.startswith("DATA of the classification panel"))
    sha = cache.SOURCES["mnist5k"].members["mnist_5k.csv.gz"][1]
    where = "<data cache>/mnist5k/mnist_5k.csv.gz"  # the cache's location, not this machine's path
    assert "(data=mnist5k): real MNIST-5k" in note and where in note and str(path) not in note and sha in note
    for claim in paper.claims:
        assert claim.verdict == "reproduced", claim  # the secret-shared learner matches its twin on MNIST-5k
    keys = _classification_keys()
    assert set(keys.values()).isdisjoint(_classification_keys(data="digits").values())
    assert {label: _classification_keys(data="digits")[label] for label in DIGITS_KEYS} == DIGITS_KEYS
    write_mnist5k(path, seed=1)  # another file in the same place: other units
    repin(monkeypatch, path.parent)
    assert set(keys.values()).isdisjoint(_classification_keys().values())


def test_shuffle_points_whose_batch_does_not_amplify_are_local_dp_and_say_so():
    from privbandits.protocols.dp.shuffle import shuffle_calibration

    by_key = {env.key: env for env in environments(_options())[0]}
    small = [p for p in placed(by_key["linear_gaussian"], _options())[0] if p.policy["kind"] == "shuffle_dp_linucb"]
    assert [p.label for p in small] == [
        f"Shuffle-DP LinUCB ε={e} (batch 100: not amplified, local DP)" for e in (1, 10)
    ]
    assert {p.model for p in small} == {"local_dp"}
    assert not any(shuffle_calibration(p.epsilon, 1e-5, 100).amplified for p in small)
    options = _options(shuffle_batch="1000")
    big = [p for p in placed(by_key["linear_gaussian"], options)[0] if p.policy["kind"] == "shuffle_dp_linucb"]
    amplified = [shuffle_calibration(p.epsilon, 1e-5, 1000).amplified for p in big]
    assert amplified == [True, False]  # ε = 1 amplifies at n = 1,000; ε = 10 does not
    assert [(p.model, p.policy["batch_size"]) for p in big] == [("shuffle_dp", 1000), ("local_dp", 1000)]
    assert big[0].label == "Shuffle-DP LinUCB ε=1"


def test_the_dp_points_are_calibrated_analytically_and_calibration_paper_gives_the_stored_units():
    """Issue 31: the map's DP baselines and CDP-FCLUB-DC run at the analytic Gaussian's σ; ``calibration=paper``
    gives back the units stored before (the points name it, since the learners' default is now analytic, issue 47;
    their run specs still hold no calibration, so the keys are those stored), and the other points are the same."""
    env = {env.key: env for env in environments(_options())[0]}["linear_gaussian"]
    analytic, paper = (placed(env, _options(**changes))[0] for changes in ({}, {"calibration": "paper"}))
    dp = {p.label: p.policy for p in analytic if p.policy["kind"].endswith("_dp_linucb")}
    assert dp and all(policy["calibration"] == "analytic" for policy in dp.values())
    assert all(p.policy["calibration"] == "paper" for p in paper if p.policy["kind"].endswith("_dp_linucb"))
    keys = {changes: {t.label: t.key for t in MAP.tasks(_options(environments="clustered_users", **dict(changes)))}
            for changes in ((), (("calibration", "paper"),))}  # fmt: skip
    analytic_keys, paper_keys = keys[()], keys[(("calibration", "paper"),)]
    factorized = "clustered_users | Joint-DP LinUCB (sqrt factorization) ε={} | seed {}"
    assert analytic_keys.keys() - paper_keys.keys() == {factorized.format(e, seed) for e in (1, 10) for seed in (0, 1)}
    # the factorization needs the analytic calibration: with calibration = paper it is left out
    private = {label for label in paper_keys if "DP" in label and "non-private" not in label}
    assert private and all(analytic_keys[label] != paper_keys[label] for label in private)
    assert all(analytic_keys[label] == paper_keys[label] for label in set(paper_keys) - private)
    clustered = {e.key: e for e in environments(_options())[0]}["clustered_users"]
    fclub = [p.policy for p in placed(clustered, _options())[0] if p.policy.get("variant") == "cdp-fclub-dc"]
    assert fclub and all(policy["noise_variance"] == "analytic" for policy in fclub)


def _panel(env, points_and_means):
    from privbandits.papers.privacy_map.report import Panel
    from privbandits.papers.privacy_map.summary import PointSummary

    return Panel(env, [PointSummary(p, mean, 1.0, 1, 0.0, 0.0, "none", (mean,)) for p, mean in points_and_means], {})


def test_best_rows_rank_within_one_notion_and_show_the_per_round_composition():
    from privbandits.papers.privacy_map.report import best_rows

    options = _options(epsilons="5")
    env = {env.key: env for env in environments(options)[0]}["classification"]
    kept = {p.model: p for p in placed(env, options)[0] if p.system != "MPC ε-greedy (secret-shared)"}
    eta = kept["mpc_eta"]  # η = log(10/0.1) = 4.61 per round: it must not outrank a whole-run DP point
    rows = best_rows(options, [_panel(env, [(kept["random"], 0.1), (eta, 0.9), (kept["none"], 0.95)])])
    header, body = rows[0], rows[1:]
    assert header[1] == "privacy notion"
    notions = {row[1]: row for row in body}
    assert set(notions) == {SEMANTICS["mpc_eta"].notion, SEMANTICS["none"].notion}
    mpc = [row for row in body if row[1] == SEMANTICS["mpc_eta"].notion]
    assert (
        mpc[0][3] == eta.label
        and mpc[0][4] == f"{eta.epsilon:.3g} per round (T·η = {20 * eta.epsilon:,.0f} over T = 20)"
    )
    assert all(row[3] != eta.label for row in body if row[1] != SEMANTICS["mpc_eta"].notion)


def test_every_point_shows_the_epsilon_a_user_pays_in_its_own_unit():
    from privbandits.papers.privacy_map.per_user import NOT_STORED, user_epsilon

    options = _options(epsilons="1", calibration="analytic")
    panels = {env.key: env for env in environments(options)[0]}
    linear, clustered = panels["linear_gaussian"], panels["clustered_users"]
    kept = {p.policy.get("kind"): p for p in placed(linear, options)[0] if "continual_release" not in p.policy}
    joint = user_epsilon(linear, kept["joint_dp_linucb"], [])
    assert joint.endswith("per round's (x, r) (PLD)") and float(joint.split()[0]) == pytest.approx(1.0, rel=0.01)
    assert user_epsilon(linear, kept["local_dp_linucb"], []).endswith("per report (PLD)")
    assert "per report" in user_epsilon(linear, kept["shuffle_dp_linucb"], [])
    assert user_epsilon(linear, kept["random"], []) == "0 (uses no data)"
    assert user_epsilon(linear, kept["linucb"], []) == "∞ (no DP)"
    fclub = next(p for p in placed(clustered, options)[0] if p.model == "fclub_cdp")
    assert user_epsilon(clustered, fclub, [{"metrics": {}}]) == NOT_STORED  # runs from before the metric
    stored = [{"metrics": {"per_user_epsilon": 1.14}}, {"metrics": {"per_user_epsilon": 1.17}}]
    assert user_epsilon(clustered, fclub, stored) == "1.17 per datum of the worst user, every privatizer (PLD)"


def _shuffle_points(options, batch: int):
    env = {env.key: env for env in environments(options)[0]}["linear_gaussian"]
    return env, [p for p in placed(env, options)[0] if p.policy.get("batch_size") == batch]


def test_shuffle_points_at_an_amplifying_batch_name_it_and_their_central_epsilon_comes_from_the_bound():
    """Issue 47 item 6: beside the batch of 100, the map adds the smallest batch within the horizon that amplifies
    at every map ε ≤ 1 (Feldman, McMillan & Talwar 2021, Thm 3.1); ε = 10 does not amplify there: local DP."""
    from privbandits.papers.privacy_map.per_user import user_epsilon
    from privbandits.papers.privacy_map.systems import smallest_amplifying_batch
    from privbandits.privacy.amplification import amplified_epsilon
    from privbandits.protocols.dp.shuffle import shuffle_calibration

    batch = smallest_amplifying_batch(1.0, 1e-5, 600)
    assert batch is not None and not shuffle_calibration(1.0, 1e-5, batch - 1).amplified
    env, points = _shuffle_points(_options(horizon="600"), batch)
    amplified, local = points
    cal = shuffle_calibration(1.0, 1e-5, batch, "analytic")
    assert cal.amplified and cal.central_epsilon == amplified_epsilon(cal.epsilon0, batch, 1e-5 / 2) <= 1.0
    assert amplified.label == f"Shuffle-DP LinUCB ε=1 (batch {batch}: central ε={cal.central_epsilon:.3g}, " + (
        "Feldman et al. Thm 3.1)"
    )
    assert (amplified.model, amplified.system) == ("shuffle_dp", f"Shuffle-DP LinUCB (batch {batch})")
    assert user_epsilon(env, amplified, []).startswith(f"{cal.central_epsilon:.3g} per report, central")
    assert local.label == f"Shuffle-DP LinUCB ε=10 (batch {batch}: not amplified, local DP)"
    assert local.model == "local_dp" and user_epsilon(env, local, []).endswith("(local DP, PLD)")
    assert _shuffle_points(_options(), batch)[1] == []  # a horizon of 20 holds no amplifying batch: none added
    listed = _shuffle_points(_options(shuffle_batches="1000"), 1000)[1]  # declared sizes, any horizon
    assert [p.model for p in listed] == ["shuffle_dp", "local_dp"]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_factorization_sits_beside_the_tree_at_the_same_epsilons_and_its_regret_is_computed(tmp_path):
    """Issue 47 item 5 on the map: Joint-DP LinUCB with the square-root factorization at every ε of the tree's
    points, joint DP (ranked with the tree), its per-user ε from its own release, its regret stored."""
    from privbandits.papers.privacy_map.per_user import user_epsilon

    options = _options(environments="linear_gaussian", epsilons="1", seeds="0")
    env = environments(options)[0][0]
    joint = [p for p in placed(env, options)[0] if p.policy["kind"] == "joint_dp_linucb"]
    tree, factorized = joint
    assert factorized.label == "Joint-DP LinUCB (sqrt factorization) ε=1" and factorized.epsilon == tree.epsilon
    assert (
        factorized.model == tree.model == "joint_dp" and factorized.policy["continual_release"] == "sqrt_factorization"
    )
    paid = user_epsilon(env, factorized, [])
    assert paid.endswith("per round's (x, r) (PLD)") and float(paid.split()[0]) == pytest.approx(1.0, rel=0.01)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        reproduction.run(MAP, options, store, tmp_path / "run", jobs=1, progress=False)
        results = store.results(MAP.tasks(options))
    by_label = {task.label: results[task.key] for task in MAP.tasks(options)}
    regret = by_label[f"linear_gaussian | {factorized.label} | seed 0"]["final_regret"]
    assert math.isfinite(regret) and regret >= 0
    assert regret != by_label[f"linear_gaussian | {tree.label} | seed 0"]["final_regret"]  # its own noise


KEYS_BEFORE_ISSUE_47_MAP = {
    (): (46, "a0378cf072e4b6113efb9883cafea9149b45f76180b7e3c5452b21329b0ac16c"),
    (("horizon", "2000"), ("epsilons", "0.1,0.5,1,2,5,10")): (
        102,
        "21c2e379cd37c5f9f5109f13facec16bd26214d5a4d39a4cd3928633c3e5fbd9",
    ),
}
"""Count and SHA-256 of the sorted (label, key) pairs of the linear-Gaussian and clustered units before the
factorization and the amplifying shuffle points were added (main at 81ceece): stored units stay reused. The hashed
bytes are exact everywhere, as test_store_keys' pins are: labels are the config's text, and a key hashes the unit's
spec, whose numbers are the config's literals (no computed float enters it)."""


def test_the_units_stored_before_keep_their_keys_and_the_new_points_only_add_units():
    import hashlib
    import json
    import re

    def new(label: str) -> bool:
        return "sqrt factorization" in label or re.search(r"batch (?!100:)\d+", label) is not None

    for changes, (count, digest) in KEYS_BEFORE_ISSUE_47_MAP.items():
        tasks = MAP.tasks(_options(environments="linear_gaussian,clustered_users", **dict(changes)))
        old = sorted((task.label, task.key) for task in tasks if not new(task.label))
        assert (len(old), hashlib.sha256(json.dumps(old).encode()).hexdigest()) == (count, digest)
        assert len(tasks) > count


def test_the_factorization_is_compared_with_the_tree_at_equal_epsilon_only_and_the_notes_keep_notions_apart():
    """Issue 47 item 7: the one cross-release table pairs points of one notion at one ε; the notes name each
    notion's unit and never call the DP baselines' ε one quantity."""
    from privbandits.papers.privacy_map.report import NOTES, release_rows

    options = _options(environments="linear_gaussian", epsilons="1,10")
    env = environments(options)[0][0]
    joint = {p.label: p for p in placed(env, options)[0] if p.policy["kind"] == "joint_dp_linucb"}
    means = {"Joint-DP LinUCB ε=1": 10.0, "Joint-DP LinUCB (sqrt factorization) ε=1": 5.0}
    means |= {"Joint-DP LinUCB ε=10": 3.0, "Joint-DP LinUCB (sqrt factorization) ε=10": 3.5}
    rows = release_rows([_panel(env, [(joint[label], mean) for label, mean in means.items()])])
    assert [(row[1], float(row[2].split()[0]), float(row[3].split()[0]), row[4]) for row in rows[1:]] == [
        ("1", 10.0, 5.0, "clearly better"),  # regret: lower is better
        ("10", 3.0, 3.5, "within the 95% intervals"),
    ]
    text = " ".join(NOTES)
    assert "DP baselines' ε is" not in text
    for unit in ("joint DP's ε", "local DP's is per user report", "shuffle DP's is the central ε", "Thm 3.1"):
        assert unit in text


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1", "option shuffle_batches.0: must be >= 2 (got 1)"),
        ("100,100", "option shuffle_batches: values must be distinct (repeated: 100)"),
    ],
)
def test_a_bad_shuffle_batch_is_refused_in_one_line_naming_the_option(value, message):
    from privbandits.experiments.overrides import OptionError

    with pytest.raises(OptionError) as refused:
        _options(shuffle_batches=value)
    assert str(refused.value) == message
