"""MPC bandit reproductions (papers/mpc) at tiny sizes: registered and described, run
through the experiment model, reports rebuilt from the store alone, units shared and keyed by their
complete spec, bad options refused with the key named."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from mnist_idx_fixture import write_mnist_folder

from privbandits.datasets.mnist import MNIST_FILES
from privbandits.experiments.catalog import REPRODUCTIONS, find
from privbandits.experiments.overrides import OptionError
from privbandits.experiments.reproduction import report, run
from privbandits.experiments.store import ResultsStore
from privbandits.papers.mpc import sweeps
from privbandits.papers.mpc.options import MAX_PRECISION, MNIST_STEMS
from privbandits.papers.mpc.reference import PAPER_FIG7
from privbandits.protocols import mpc_bandit

NAMES = tuple(f"mpc-{key}" for key in ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "table1"))


@pytest.fixture
def mnist(tmp_path):
    """A tiny MNIST folder: 40 training and 20 held-out random 28 × 28 images of 10 classes."""
    return write_mnist_folder(tmp_path / "mnist", train=40, test=20, seed=5)


def _run(name: str, raw: dict[str, str], store: ResultsStore, out):
    """Run ``name`` with ``raw`` options; the report rebuilt from the store alone must be the same."""
    reproduction = find(name)
    options = reproduction.parse(raw)
    summary, paper = run(reproduction, options, store, out, progress=False)
    again = report(reproduction, options, store, out)
    assert again.markdown() == paper.markdown()
    return summary, paper


def test_every_figure_and_table_is_registered_with_every_option_described():
    for name in NAMES:
        model = REPRODUCTIONS[name].options_model()
        assert REPRODUCTIONS[name].description.startswith("MPC bandit paper ")
        assert all(field.description for field in model.model_fields.values()), name
    assert MNIST_STEMS == tuple(MNIST_FILES.values()) and MAX_PRECISION == mpc_bandit.MAX_PRECISION
    defaults = find("mpc-fig8").parse({})
    assert (defaults.precisions, defaults.runs, defaults.epsilon, defaults.sweeps) == ((14, 16, 18, 20, 22, 24, 26), 3,
                                                                                       0.01, 3)  # fmt: skip


def test_the_options_import_nothing_heavy():
    code = (
        "import sys, privbandits.papers.mpc.options; "
        "heavy = {'numpy', 'matplotlib', 'numba', 'privbandits.protocols'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_rewards_pack_into_bits_and_back():
    rewards = (np.random.default_rng(0).random(1001) < 0.3).astype(float)
    stored = {"rounds": len(rewards), "rewards": sweeps.pack(rewards)}
    assert np.array_equal(sweeps.rewards_of(stored), rewards)
    with pytest.raises(ValueError, match="0/1"):
        sweeps.pack(np.array([0.5]))


def test_fig3_with_changed_fractions_reuses_the_stored_runs(tmp_path):
    """The issue's bug: other ``fractions`` into the same --out crashed with KeyError; now the sizes are
    prefixes of the stored sweeps."""
    raw = {"runs": "1", "private_etas": ""}
    with ResultsStore(tmp_path / "r.sqlite") as store:
        summary, paper = _run("mpc-fig3", raw, store, tmp_path / "out")
        assert len(summary.computed) == 10 and (tmp_path / "out" / "mpc-fig3.png").is_file()
        assert [c.verdict for c in paper.claims][1] == "reproduced"  # uniform play (η ≈ log 10) loses reward
        summary, other = _run("mpc-fig3", raw | {"fractions": "0.3,1.0"}, store, tmp_path / "out")
    assert summary.computed == [] and summary.stored == 10
    table = next(iter(other.tables.values()))
    assert table[0][2:4] == ["T = 431", "T = 1438"] and table[1:] != next(iter(paper.tables.values()))[1:]
    assert next(iter(paper.tables.values()))[1][4] == table[1][3]  # the full sweep is the same unit


def test_private_figures_run_on_an_mnist_folder_and_share_units(tmp_path, mnist):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        summary, fig8 = _run("mpc-fig8", {"precisions": "20", "runs": "1", "sweeps": "1", "mnist": str(mnist)}, store,
                             tmp_path / "out")  # fmt: skip
        assert len(summary.computed) == 3  # two masks and the plaintext twin
        assert [c.statement for c in fig8.claims][0] == "the optimum is L = 20"
        assert not any("STAND-IN" in note for note in fig8.notes) and "40 training rounds" in fig8.notes[0]
        summary, fig9 = _run("mpc-fig9", {"iterations": "7", "runs": "1", "mnist": str(mnist)}, store, tmp_path / "out")
        assert summary.computed == [] and summary.stored == 1  # Fig. 8's integer mask at L = 20 is this unit
        assert fig9.tables["Average reward"][1][1] == fig8.tables["Average reward"][1][1]
        summary, fig2 = _run("mpc-fig2", {"epsilons": "0.1", "runs": "1", "mnist": str(mnist)}, store, tmp_path / "out")
        assert len(summary.computed) == 2 and fig2.claims[0].statement.startswith("private and non-private")
    fig9_keys = {t.key for t in find("mpc-fig9").tasks(find("mpc-fig9").parse({"mnist": str(mnist)}))}
    (mnist / MNIST_FILES["train_labels"]).write_bytes((mnist / MNIST_FILES["train_labels"]).read_bytes()[:-1] + b"\1")
    changed = {t.key for t in find("mpc-fig9").tasks(find("mpc-fig9").parse({"mnist": str(mnist)}))}
    assert not fig9_keys & changed  # a changed data file is a different task


def test_fig7_marks_the_stand_in_and_reports_from_stored_units(tmp_path, monkeypatch):
    raw = {"epsilons": "0.1", "runs": "1", "checkpoints": "2"}
    with ResultsStore(tmp_path / "r.sqlite") as store:
        _, paper = _run("mpc-fig7", raw, store, tmp_path / "out")
        assert (tmp_path / "out" / "mpc-fig7.png").is_file()
        assert any("STAND-IN" in note for note in paper.notes)
        assert paper.claims[0].paper == PAPER_FIG7

        def refuse(*args, **kwargs):
            raise AssertionError("a stored unit was recomputed")

        monkeypatch.setattr(sweeps, "PlaintextEpsilonGreedy", refuse)
        summary, again = _run("mpc-fig7", raw, store, tmp_path / "out")
    assert summary.computed == [] and again.tables == paper.tables


def test_cost_reproductions_report_rounds_beside_the_papers(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        _, table = _run("mpc-table1", {"n_arms": "4", "repeat": "1"}, store, tmp_path / "out")
        _, fig5 = _run("mpc-fig5", {"party_counts": "2,3", "arm_counts": "2", "rounds": "1"}, store, tmp_path / "out")
        _, fig4 = _run("mpc-fig4", {"arm_counts": "3,4", "rounds": "1"}, store, tmp_path / "out")
    operations = {row[0]: row for row in table.tables["Operations"][1:]}
    assert operations["add"][1] == "0" and operations["mul"][1] == "1" and operations["mul"][2] == "2"
    assert operations["reciprocal"][1] == "22"  # 8 exp squarings + 7 × 2 Newton–Raphson products
    assert (tmp_path / "out" / "mpc-fig5.png").is_file() and fig5.claims[0].paper == "O(|P|²)"
    assert [row[0] for row in fig4.tables["Cost per learner round"][1:]] == ["3", "4"]
    assert "nan" in fig4.claims[1].ours  # no |A| ≥ 40: no slope


def test_fig6_finds_a_reward_optimal_eta_per_arm_count(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        _, paper = _run("mpc-fig6", {"arm_counts": "3", "runs": "1"}, store, tmp_path / "out")
    rows = paper.tables["Average reward over one sweep (mean over runs)"]
    assert rows[1][0] == "3" and float(rows[1][2]) >= float(rows[1][4])  # best η beats uniform play


@pytest.mark.parametrize("name", NAMES)
def test_a_changed_seed_is_a_different_task(name):
    """Run r uses seed + r, so with one run a new seed shares nothing (with several, seed 1 reuses runs 1 …)."""
    reproduction = find(name)
    one = {"runs": "1"} if "runs" in reproduction.options_model().model_fields else {}
    keys = {task.key for task in reproduction.tasks(reproduction.parse(one))}
    reseeded = {task.key for task in reproduction.tasks(reproduction.parse(one | {"seed": "7"}))}
    assert keys and not keys & reseeded


def test_a_changed_size_or_setting_is_a_different_task():
    def keys(name, raw):
        return {task.key for task in find(name).tasks(find(name).parse(raw))}

    assert keys("mpc-fig8", {"sweeps": "2"}).isdisjoint(keys("mpc-fig8", {"sweeps": "3"}))
    assert keys("mpc-fig6", {"bandwidth": "1.0"}).isdisjoint(keys("mpc-fig6", {}))
    assert keys("mpc-fig9", {"epsilon": "0.05"}).isdisjoint(keys("mpc-fig9", {}))
    assert keys("mpc-fig4", {"rounds": "6"}).isdisjoint(keys("mpc-fig4", {}))
    assert keys("mpc-table1", {"n_arms": "50"}) != keys("mpc-table1", {})
    assert keys("mpc-fig3", {"fractions": "0.3"}) == keys("mpc-fig3", {})  # sizes are prefixes of stored sweeps


@pytest.mark.parametrize(
    ("name", "raw", "key"),
    [
        ("mpc-fig2", {"runs": "abc"}, "runs"),
        ("mpc-fig2", {"runs": "0"}, "runs"),
        ("mpc-fig2", {"runs": "-3"}, "runs"),
        ("mpc-fig2", {"epsilons": "0.1,x"}, "epsilons"),
        ("mpc-fig2", {"epsilons": "1.5"}, "epsilons"),
        ("mpc-fig2", {"epsilons": "nan"}, "epsilons"),
        ("mpc-fig2", {"epsilons": ""}, "epsilons"),
        ("mpc-fig2", {"mnist": "/no/such/folder"}, "mnist"),
        ("mpc-fig2", {"seed": "-1"}, "seed"),
        ("mpc-fig2", {"epsilon": "0.1"}, "epsilon"),
        ("mpc-fig3", {"fractions": "0"}, "fractions"),
        ("mpc-fig3", {"fractions": "inf"}, "fractions"),
        ("mpc-fig3", {"private_etas": "1.0"}, "private_etas"),
        ("mpc-fig3", {"private_etas": "nan"}, "private_etas"),
        ("mpc-fig4", {"arm_counts": "1,5"}, "arm_counts"),
        ("mpc-fig4", {"rounds": "2.5"}, "rounds"),
        ("mpc-fig5", {"party_counts": "1"}, "party_counts"),
        ("mpc-fig6", {"bandwidth": "0"}, "bandwidth"),
        ("mpc-fig6", {"bandwidth": "inf"}, "bandwidth"),
        ("mpc-fig7", {"checkpoints": "0"}, "checkpoints"),
        ("mpc-fig8", {"precisions": "20,27"}, "precisions"),
        ("mpc-fig8", {"epsilon": "-0.1"}, "epsilon"),
        ("mpc-fig8", {"sweeps": "0"}, "sweeps"),
        ("mpc-fig9", {"iterations": "-1"}, "iterations"),
        ("mpc-table1", {"repeat": "abc"}, "repeat"),
        ("mpc-table1", {"repeat": "0"}, "repeat"),
        ("mpc-table1", {"n_arms": "1"}, "n_arms"),
        ("mpc-table1", {"n_arm": "10"}, "n_arm"),
    ],
)
def test_bad_options_are_refused_naming_the_key(name, raw, key):
    with pytest.raises(OptionError, match=key) as error:
        find(name).parse(raw)
    assert "\n" not in str(error.value)


def test_an_mnist_folder_without_its_files_is_refused(tmp_path):
    with pytest.raises(OptionError, match="mnist: .* not an MNIST folder"):
        find("mpc-fig7").parse({"mnist": str(tmp_path)})
