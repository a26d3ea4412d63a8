"""The end-to-end audits (issue 47) and the mutation suite that proves they can fail.

Each mutant is a weakened copy of a learner or a protocol party (:mod:`privbandits.audit.mutants`, shipped in the
package so that ``privbandits audit`` runs, stores and reports each at full size; documented there as a copy for the
audit, never a learner to use), injected at the learner and protocol level (a subclass, or FCLUB's local server
patched into its driver for the audit's duration), never into the functions the audits call: noise dropped or
scaled down, clipping skipped, ε misused, the threshold dropped, composition ignored. Every mutant keeps its ledger
(and metrics) saying what the unmodified code says, so only the released outputs can give it away; each must be
caught (its audited lower bound above its own ledger's claim), and the unmodified code must not be (claim ≥ lower
bound), at the same sizes and seeds. The sizes fit the default suite; ``slow`` reruns the unmodified audits at their
full size.
"""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.audit import end_to_end, mutants
from privbandits.audit.mutants import (
    MUTANTS,
    JointFactorizationNoiseTenth,
    JointTreeNoiseTenth,
    JointWithoutTreeNoise,
    LocalTenEpsilon,
    ShuffleNoiseTenth,
)
from privbandits.audit.stats import audit_samples
from privbandits.protocols.dp import JointDPLinUCB, LocalDPLinUCB, ShuffleDPLinUCB

# -- the suite ---------------------------------------------------------------------------------------------------------
SIZES = {"e2e.dp_linucb.joint": 150, "e2e.dp_linucb.joint_mf": 150, "e2e.dp_linucb.local": 500,
         "e2e.dp_linucb.shuffle": 500, "e2e.fclub.local_server": 400, "e2e.fclub.local_server_mf": 400,
         "e2e.mpc_bandit.learner": 100,
         "e2e.mpc_bandit.twin": 500, "e2e.p2b.pipeline": 200}  # fmt: skip
"""Samples per side in the default suite (mutants and unmodified code together: about half a minute on 2 busy cores;
FCLUB needs the most runs: its claim composes two privatizers at δ = 0.1 each)."""


def _bound(name: str, options: dict, samples: int, seed: int = 0):
    audit = end_to_end.AUDITS[name](**options)
    out0, out1 = audit.sample(samples, np.random.default_rng(seed), audit.weakened)
    return audit, audit_samples(out0, out1, audit.claimed_delta, discrete=audit.discrete)


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_each_learner_and_protocol_level_mutant_is_caught(mutant):
    audit, bound = mutants.audit_mutant(mutant, SIZES[MUTANTS[mutant].audit])
    assert bound.epsilon_lower > audit.claimed_epsilon, (mutant, audit.claimed_epsilon, bound.epsilon_lower)


@pytest.mark.parametrize("name", list(end_to_end.AUDITS))
def test_the_unmodified_code_meets_its_claim_at_the_suites_size(name):
    audit, bound = _bound(name, {}, SIZES[name])
    assert audit.claimed_epsilon >= bound.epsilon_lower, (name, audit.claimed_epsilon, bound.epsilon_lower)


def test_every_audit_is_driven_by_a_mutant():
    assert {mutant.audit for mutant in MUTANTS.values()} == set(end_to_end.AUDITS)
    assert len(MUTANTS) >= 10 and all(name.startswith(mutants.PREFIX) for name in MUTANTS)


def test_the_fclub_server_is_patched_in_only_within_the_audit_and_restored_on_error():
    from privbandits.protocols.fclub import driver
    from privbandits.protocols.fclub.local_server import LocalServer

    with mutants.injected("mutant.joint.tree_noise_dropped"):  # no server to patch: nothing changes
        assert driver.LocalServer is LocalServer
    with pytest.raises(RuntimeError, match="inside"), mutants.injected("mutant.fclub.server_hundredth"):
        assert driver.LocalServer is mutants.FCLUBServerHundredth
        raise RuntimeError("inside")
    assert driver.LocalServer is LocalServer


def test_the_mutants_keep_the_metrics_of_the_unmodified_code():
    """What gives a noise mutant away is its released outputs, never its ledger or its metrics."""
    kwargs = {"epsilon": 1.0, "delta": 1e-5, "horizon": 4, "rng": 0}
    assert ShuffleNoiseTenth(1, 1, **kwargs).noise_std == ShuffleDPLinUCB(1, 1, **kwargs).noise_std
    assert JointTreeNoiseTenth(1, 1, **kwargs).noise_std == JointDPLinUCB(1, 1, **kwargs).noise_std
    factorized = {**kwargs, "continual_release": "sqrt_factorization"}
    mutant, unmodified = JointFactorizationNoiseTenth(1, 1, **factorized), JointDPLinUCB(1, 1, **factorized)
    for learner in (mutant, unmodified):
        learner.update(np.ones((1, 1)), 0, 0.5)
    assert mutant.noise_std == unmodified.noise_std and mutant.ledger.entries == unmodified.ledger.entries
    assert LocalTenEpsilon(1, 1, **kwargs).ledger.entries == LocalDPLinUCB(1, 1, **kwargs).ledger.entries


def test_the_claim_is_the_ledgers():
    """Joint DP: the tree's one entry; local DP: ε per report; the twin: its declared η; P2B: the shuffler's ε(p)."""
    assert end_to_end.joint_learner(epsilon=2.0).claimed_epsilon == 2.0
    assert end_to_end.local_learner(epsilon=0.5).claimed_epsilon == pytest.approx(0.5)
    assert end_to_end.mpc_twin(n_arms=2, exploration=0.5).claimed_epsilon == pytest.approx(np.log(4.0))
    assert end_to_end.p2b_pipeline(participation=0.5).claimed_epsilon == pytest.approx(np.log(2.0))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(end_to_end.AUDITS))
def test_the_unmodified_code_meets_its_claim_at_full_size(name):
    audit, bound = _bound(name, {}, end_to_end.SAMPLES[name], seed=1)
    assert audit.claimed_epsilon >= bound.epsilon_lower, (name, audit.claimed_epsilon, bound.epsilon_lower)


# -- the command line --------------------------------------------------------------------------------------------------
def test_cli_sets_options_of_an_end_to_end_audit_and_prints_progress_and_the_table(tmp_path):
    """``--mechanism NAME -o KEY=VALUE``: the options reach the audit (and its unit's key); one progress line a unit
    and the table also when the output is not a terminal (CliRunner's is not); exit 0 when every claim holds."""
    from typer.testing import CliRunner

    from privbandits.cli import app
    from privbandits.experiments.store import ResultsStore

    store, out = tmp_path / "s.sqlite", tmp_path / "audit"
    args = ["audit", "--mechanism", "e2e.dp_linucb.local", "-o", "dim=2", "-o", "epsilon=2", "--samples", "50",
            "--store", str(store), "--out", str(out)]  # fmt: skip
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert "[1/2] done: audit e2e.dp_linucb.local (as calibrated)" in done.output
    assert "e2e.dp_linucb.local" in done.output and "claim holds" in done.output
    with ResultsStore(store) as results:
        (unit,) = [u for u in results.units_of("privbandits.audit.run:audit_unit")]
    assert unit.params["options"] == {"dim": 2, "epsilon": 2.0} and unit.result["claimed_epsilon"] == 2.0
    assert unit.result["settings"]["dim"] == 2


@pytest.mark.parametrize(("option", "message"), [
    ("nope=1", "no mechanism named takes 'nope'"),
    ("horizon=many", "-o horizon=many: e2e.dp_linucb.joint's horizon must be int"),
    ("horizon", "-o takes KEY=VALUE"),
    ("horizon=0", "-o for e2e.dp_linucb.joint"),
])  # fmt: skip
def test_cli_refuses_bad_options_with_exit_2_before_running(option, message, tmp_path):
    from typer.testing import CliRunner

    from privbandits.cli import app

    done = CliRunner().invoke(app, ["audit", "-m", "e2e.dp_linucb.joint", "-o", option, "--store",
                                    str(tmp_path / "s"), "--out", str(tmp_path / "o")])  # fmt: skip
    assert done.exit_code == 2, done.output
    assert message in done.output
    assert not (tmp_path / "s").exists()


def test_cli_exits_1_when_a_claim_is_below_its_lower_bound(tmp_path, monkeypatch):
    """A refuted claim (here: the joint learner without its tree noise, patched in) ends the command with exit 1."""
    from typer.testing import CliRunner

    from privbandits.audit import run
    from privbandits.cli import app

    def mutated(**options):
        return end_to_end.joint_learner(**options, learner=JointWithoutTreeNoise)

    monkeypatch.setitem(run.MECHANISMS, "e2e.dp_linucb.joint", mutated)
    done = CliRunner().invoke(app, ["audit", "-m", "e2e.dp_linucb.joint", "--samples", "100", "--store",
                                    str(tmp_path / "s"), "--out", str(tmp_path / "o")])  # fmt: skip
    assert done.exit_code == 1, done.output
    assert "CLAIM REFUTED" in done.output
