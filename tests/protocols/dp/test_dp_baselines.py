"""The standard DP linear bandits (issue 16, item 1): joint DP (Shariff & Sheffet 2018), local DP (Zheng et al.
2020) and shuffle DP (Chowdhury & Zhou 2022) LinUCB.

Each: with ε = ∞ it is the project's LinUCB; its noise scale and ledger follow its paper's formula (written out
here, not imported); bad input is refused with nothing changed; it runs from a config; its regret grows as ε
shrinks (slow).
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from bad_input import digest, rejects

from privbandits.envs.synthetic import LinearGaussianBandit
from privbandits.experiments.config import ConfigError, parse_config
from privbandits.experiments.runner import run_single
from privbandits.linear import LinUCB
from privbandits.privacy.calibration import pld_epsilon, snapped_std
from privbandits.privacy.ledger import PrivacyLedger
from privbandits.privacy.noise import grid_step
from privbandits.privacy.tree_mechanism import accounted_epsilon
from privbandits.protocols.dp import JointDPLinUCB, LocalDPLinUCB, ShuffleDPLinUCB
from privbandits.validation import CallOrderError

LEARNERS = {
    "joint": (JointDPLinUCB, {}),
    "local": (LocalDPLinUCB, {}),
    "shuffle": (ShuffleDPLinUCB, {"batch_size": 1}),
}


def _stream(rounds: int, dim: int, n_arms: int, seed: int = 3):
    """A fixed stream: contexts and every arm's realised reward, drawn once from the linear-Gaussian problem."""
    env = LinearGaussianBandit(dim=dim, n_arms=n_arms)
    env.reset(np.random.default_rng(seed))
    contexts, rewards = [], []
    for _ in range(rounds):
        step = env.next_round()
        contexts.append(step.contexts.copy())
        rewards.append([env.reward(a) for a in range(n_arms)])
    return contexts, np.array(rewards)


def _play(learner, contexts, rewards) -> list[int]:
    arms = []
    for x, r in zip(contexts, rewards, strict=True):
        arm = learner.select(x)
        learner.update(x, arm, float(r[arm]))
        arms.append(arm)
    return arms


# -- ε = ∞: the mechanism is off and each baseline is LinUCB ---------------------------------------------------
@pytest.mark.parametrize("name", list(LEARNERS))
@pytest.mark.parametrize("alpha, reg", [(1.0, 1.0), (0.5, 2.0)])
def test_noise_off_chooses_the_arms_of_linucb(name, alpha, reg):
    contexts, rewards = _stream(300, dim=8, n_arms=6)
    cls, extra = LEARNERS[name]
    private = cls(6, 8, epsilon=math.inf, delta=1e-5, horizon=300, alpha=alpha, reg=reg, rng=1, **extra)
    expected = _play(LinUCB(6, 8, alpha=alpha, reg=reg), contexts, rewards)
    assert _play(private, contexts, rewards) == expected
    assert len(set(expected)) > 1  # the stream is not trivial
    assert private.noise_std == 0 and private.shift == 0
    assert all(entry.epsilon == math.inf for entry in private.ledger.entries)


def test_batched_shuffle_without_noise_is_linucb_updated_once_per_batch():
    contexts, rewards = _stream(120, dim=5, n_arms=4)
    shuffled = ShuffleDPLinUCB(4, 5, epsilon=math.inf, delta=1e-5, horizon=120, batch_size=10, rng=0)
    linucb, batch, arms = LinUCB(4, 5), [], []
    for x, r in zip(contexts, rewards, strict=True):
        arm = linucb.select(x)
        arms.append(arm)
        batch.append((x, arm, float(r[arm])))
        if len(batch) == 10:
            for item in batch:
                linucb.update(*item)
            batch = []
    assert _play(shuffled, contexts, rewards) == arms
    assert len(shuffled.ledger.entries) == 12


# -- noise scale and ledger against the papers' formulas -------------------------------------------------------
POINTS = [(1.0, 1e-5), (0.2, 0.1)]


@pytest.mark.parametrize("epsilon, delta", POINTS)
def test_joint_dp_noise_and_ledger_follow_shariff_sheffet(epsilon, delta):
    horizon, dim = 1000, 30
    # Shariff & Sheffet 2018, §4.2 (Gaussian noise): σ²_noise = 16 m L̃⁴ ln(4/δ)² / ε², m = 1 + ⌈log₂ T⌉, with
    # L̃² = L² + B̃² = 1 + 1; Υ = σ_noise √(2m) (4√d + 2 ln(2T/α)) and the regulariser is shifted by 2Υ (α = 1/T).
    m = 1 + math.ceil(math.log2(horizon))
    paper = math.sqrt(16 * m * 2.0**2 * math.log(4 / delta) ** 2 / epsilon**2)
    # recalibrated for the data snapped to σ's grid: sensitivity min(2 + g√n, 2√2), n = (d+1)(d+2)/2
    sigma = snapped_std(paper, 2.0, (dim + 1) * (dim + 2) // 2, 2 * math.sqrt(2))
    sensitivity = min(2 + grid_step(sigma) * math.sqrt((dim + 1) * (dim + 2) / 2), 2 * math.sqrt(2))
    assert sigma == pytest.approx(paper / 2 * sensitivity, rel=1e-12)
    upsilon = sigma * math.sqrt(2 * m) * (4 * math.sqrt(dim) + 2 * math.log(2 * horizon / (1 / horizon)))
    ledger = PrivacyLedger()
    learner = JointDPLinUCB(4, dim, epsilon=epsilon, delta=delta, horizon=horizon, rng=0, ledger=ledger,
                            calibration="paper")
    assert m == 11 and learner.levels == m
    assert learner.noise_std == pytest.approx(sigma, rel=1e-12)
    assert learner.shift == pytest.approx(2 * upsilon, rel=1e-12)
    contexts = np.zeros((4, dim))
    contexts[0, 0] = 1.0
    learner.update(contexts, 0, 1.0)
    # the first release carries one tree node (N̄ + N̄ᵀ)/√2: off-diagonal entries of standard deviation σ
    noise = learner.gram - np.outer(contexts[0], contexts[0])
    off_diagonal = noise[np.triu_indices(dim, 1)]
    assert np.std(off_diagonal) == pytest.approx(sigma, rel=0.15)
    for _ in range(5):
        learner.update(contexts, 1, 0.5)
    (entry,) = ledger.entries  # one entry: the tree covers every release
    assert (entry.mechanism, entry.epsilon, entry.delta) == ("dp_linucb.joint.tree", epsilon, delta)
    assert entry.details["noise_std"] == pytest.approx(sigma, rel=1e-12) and entry.details["levels"] == m
    # the same noise through dp-accounting (RDP): m Gaussian nodes of the snapped datum's sensitivity; the
    # paper's calibration is conservative
    assert entry.details["effective_sensitivity"] == pytest.approx(sensitivity, rel=1e-12)
    assert entry.details["snapping_slack"] == pytest.approx(sensitivity - 2, rel=1e-12)
    assert entry.details["accounted_epsilon"] == pytest.approx(pld_epsilon(sigma, m, delta, sensitivity))  # PLD
    assert entry.details["rdp_epsilon"] == pytest.approx(accounted_epsilon(sigma, m, delta, sensitivity))  # RDP
    assert entry.details["accounted_epsilon"] <= entry.details["rdp_epsilon"] < epsilon


@pytest.mark.parametrize("epsilon, delta", POINTS)
def test_local_dp_noise_and_ledger_follow_zheng_et_al(epsilon, delta):
    horizon, dim = 500, 40
    # Zheng et al. 2020 (arXiv:2006.00701, Alg. 5, LDP linear bandit): the user sends x xᵀ + B and r x + ξ with
    # B symmetric, upper triangle i.i.d. N(0, σ²), ξ ~ N(0, σ² I), σ = 4 √(2 ln(1.25/δ)) / ε; the server shifts
    # the regulariser by 2Υ_t, Υ_t = σ √t (4√d + 2 ln(2T/α)).
    n = dim * (dim + 1) // 2 + dim  # one report's snapped coordinates: sensitivity min(√6 + g√n, 2√2)
    sigma = snapped_std(4 * math.sqrt(2 * math.log(1.25 / delta)) / epsilon, math.sqrt(6), n, 2 * math.sqrt(2))
    sensitivity = min(math.sqrt(6) + grid_step(sigma) * math.sqrt(n), 2 * math.sqrt(2))
    learner = LocalDPLinUCB(3, dim, epsilon=epsilon, delta=delta, horizon=horizon, rng=0, calibration="paper")
    assert learner.noise_std == pytest.approx(sigma, rel=1e-12)
    contexts = np.zeros((3, dim))
    contexts[2, 1] = 1.0
    learner.update(contexts, 2, -1.0)
    noise = learner.gram - np.outer(contexts[2], contexts[2])
    assert np.array_equal(noise, noise.T)
    assert np.std(noise[np.triu_indices(dim)]) == pytest.approx(sigma, rel=0.15)  # diagonal included, var σ²
    for t in range(2, 5):
        learner.update(contexts, 0, 0.0)
        upsilon = sigma * math.sqrt(t) * (4 * math.sqrt(dim) + 2 * math.log(2 * horizon * horizon))
        assert learner.shift == pytest.approx(2 * upsilon, rel=1e-12)
    entries = learner.ledger.entries
    assert len(entries) == 4  # one per report
    assert {(e.mechanism, e.epsilon, e.delta) for e in entries} == {("dp_linucb.local", epsilon, delta)}
    assert entries[0].details["noise_std"] == pytest.approx(sigma, rel=1e-12)
    # dp-accounting's ε for one report (L2 sensitivity √(2 + 4): upper triangle of x xᵀ, then r x; + the slack)
    assert entries[0].details["accounted_epsilon"] == pytest.approx(pld_epsilon(sigma, 1, delta, sensitivity))
    assert entries[0].details["rdp_epsilon"] == pytest.approx(accounted_epsilon(sigma, 1, delta, sensitivity))


def _fmt_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """Feldman, McMillan & Talwar 2021, Theorem 3.1: n shuffled ε₀-LDP reports are (ε, δ)-DP with this ε."""
    e0 = math.exp(epsilon0)
    return math.log(1 + (e0 - 1) / (e0 + 1) * (8 * math.sqrt(e0 * math.log(4 / delta)) / math.sqrt(n) + 8 * e0 / n))


@pytest.mark.parametrize(
    "epsilon, delta, batch_size, amplified",
    [(1.0, 1e-6, 100, False), (0.5, 1e-3, 20_000, True)],
)
def test_shuffle_dp_noise_and_ledger_follow_amplification_by_shuffling(epsilon, delta, batch_size, amplified):
    learner = ShuffleDPLinUCB(3, 4, epsilon=epsilon, delta=delta, horizon=50, batch_size=batch_size, rng=0,
                              calibration="paper")
    cal = learner.calibration
    assert cal.amplified is amplified
    if amplified:
        # ε₀: the largest local ε whose batch is ε-DP at δ/2 by Theorem 3.1 (ε₀ ≤ ln(n / (16 ln(2/δ'))));
        # Theorem 3.8 charges (e^ε + 1)(1 + e^−ε₀/2) n δ₀, which gets the other δ/2.
        assert cal.epsilon0 > epsilon
        assert _fmt_epsilon(cal.epsilon0, batch_size, delta / 2) == pytest.approx(epsilon, rel=1e-9)
        assert cal.epsilon0 <= math.log(batch_size / (16 * math.log(2 / (delta / 2))))
        assert cal.delta0 == pytest.approx(
            delta / 2 / ((math.exp(epsilon) + 1) * (1 + math.exp(-cal.epsilon0) / 2) * batch_size)
        )
        assert cal.central_epsilon == pytest.approx(epsilon, rel=1e-9) and cal.central_delta <= delta * (1 + 1e-12)
    else:  # 16 ln(4/δ) > n: the theorem says nothing, the batch is as private as one local report
        assert (cal.epsilon0, cal.delta0, cal.central_epsilon, cal.central_delta) == (epsilon, delta, epsilon, delta)
    # the local randomizer is Zheng et al.'s σ₀ = 4 √(2 ln(1.25/δ₀)) / ε₀, raised to the analytic Gaussian
    # (Balle & Wang 2018) for sensitivity √6 where the classic formula falls short
    sigma0 = max(
        4 * math.sqrt(2 * math.log(1.25 / cal.delta0)) / cal.epsilon0,  # Zheng et al., as in the local test
        math.sqrt(6) * dp_accounting.get_sigma_gaussian(cal.epsilon0, cal.delta0),
    )
    sigma0 = snapped_std(sigma0, math.sqrt(6), 4 * 5 // 2 + 4, 2 * math.sqrt(2))  # for the snapped report (d = 4)
    assert learner.noise_std == pytest.approx(sigma0, rel=1e-12)
    if not amplified:  # a batch the theorem cannot amplify gets exactly the local-DP noise
        assert learner.noise_std == LocalDPLinUCB(3, 4, epsilon=epsilon, delta=delta, horizon=50,
                                                 calibration="paper").noise_std


def test_shuffle_releases_one_ledger_entry_per_full_batch():
    learner = ShuffleDPLinUCB(3, 4, epsilon=1.0, delta=1e-5, horizon=50, batch_size=7, rng=0)
    contexts = np.eye(3, 4)
    for t in range(20):
        before = learner.gram.copy()
        learner.update(contexts, t % 3, 0.5)
        assert np.array_equal(learner.gram, before) == ((t + 1) % 7 != 0)  # nothing is seen mid-batch
    entries = learner.ledger.entries
    assert len(entries) == 2 and learner.released == 14 and len(learner.pending) == 6
    assert {(e.mechanism, e.epsilon, e.delta) for e in entries} == {("dp_linucb.shuffle", 1.0, 1e-5)}
    assert entries[0].details["batch_size"] == 7 and entries[0].details["amplified"] is False


def test_private_learners_clip_to_the_unit_ball_and_reward_range():
    learner = LocalDPLinUCB(2, 3, epsilon=1e9, delta=0.5, horizon=10, shift_regularizer=False, rng=0,
                            calibration="paper")  # σ ∝ 1/ε (the analytic σ stops at ANALYTIC_EPSILON_CAP)
    contexts = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 1.0]])
    learner.update(contexts, 0, 7.0)
    assert np.allclose(learner.gram, np.outer([0.6, 0.8, 0], [0.6, 0.8, 0]), atol=1e-6)
    assert np.allclose(learner.u, [0.6, 0.8, 0.0], atol=1e-6)


# -- bad input ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(LEARNERS))
def test_bad_calls_are_refused_with_nothing_changed(name):
    cls, extra = LEARNERS[name]
    learner = cls(3, 2, epsilon=1.0, delta=1e-3, horizon=20, rng=0, **extra)
    contexts = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    learner.update(contexts, 1, 0.5)
    state = digest(learner)
    assert "arm must be an integer in [0, n_arms) = [0, 3), got 3" in rejects(
        lambda: learner.update(contexts, 3, 0.0), "arm"
    )
    rejects(lambda: learner.update(contexts, True, 0.0), "arm")
    assert "got nan" in rejects(lambda: learner.update(contexts, 0, float("nan")), "reward")
    rejects(lambda: learner.update(contexts[:2], 0, 0.0), "contexts")
    bad = contexts.copy()
    bad[2, 1] = np.inf
    rejects(lambda: learner.update(bad, 0, 0.0), "contexts")
    rejects(lambda: learner.select(bad), "contexts")
    rejects(lambda: learner.select(np.ones((3, 3))), "contexts")
    assert digest(learner) == state


@pytest.mark.parametrize(
    "options, name, message",
    [
        ({"epsilon": 0.0}, "epsilon", "epsilon must be > 0 (inf = no privacy), got 0.0"),
        ({"epsilon": float("nan")}, "epsilon", "got nan"),
        ({"delta": 1.0}, "delta", "delta must be in (0, 1), got 1.0"),
        ({"horizon": 0}, "horizon", "horizon must be >= 1, got 0"),
        ({"horizon": 10.0}, "horizon", "got 10.0"),
        ({"alpha": -1.0}, "alpha", ">= 0, got -1.0"),
        ({"reg": 0}, "reg", "> 0, got 0"),
        ({"failure_probability": 1.5}, "failure_probability", "got 1.5"),
        ({"shift_regularizer": 1}, "shift_regularizer", "a bool (True or False), got 1"),
        ({"tie_break": "first"}, "tie_break", "one of 'lowest', 'random', got 'first'"),
        ({"ledger": []}, "ledger", "got []"),
    ],
)
@pytest.mark.parametrize("name_of_learner", list(LEARNERS))
def test_constructors_name_the_bad_parameter(options, name, message, name_of_learner):
    cls, extra = LEARNERS[name_of_learner]
    arguments = {"epsilon": 1.0, "delta": 1e-3, "horizon": 10, **extra, **options}
    text = rejects(lambda: cls(3, 2, **arguments), name)
    assert text.startswith(f"{cls.__name__}: ") and message in text


def test_shuffle_batch_size_and_joint_horizon_are_enforced():
    assert "batch_size must be >= 1, got 0" in rejects(
        lambda: ShuffleDPLinUCB(2, 2, epsilon=1.0, delta=0.1, horizon=5, batch_size=0), "batch_size"
    )
    learner = JointDPLinUCB(2, 2, epsilon=1.0, delta=0.1, horizon=3, rng=0)
    contexts = np.eye(2)
    for _ in range(3):
        learner.update(contexts, 0, 1.0)
    state = digest(learner)
    with pytest.raises(CallOrderError, match="horizon = 3"):
        learner.update(contexts, 0, 1.0)
    assert digest(learner) == state


# -- configs and the runner ------------------------------------------------------------------------------------
KINDS = {
    "joint_dp_linucb": {},
    "local_dp_linucb": {"alpha": 0.5},
    "shuffle_dp_linucb": {"batch_size": 5, "delta": 1e-3},
}


def _experiment(environment: dict, *policies: dict, horizon: int = 30) -> dict:
    return {
        "name": "dp-baselines",
        "horizon": horizon,
        "seeds": [0],
        "series_points": 5,
        "environment": environment,
        "policies": list(policies),
    }


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_runs_from_a_config_through_the_runner(kind):
    policy = {"kind": kind, "epsilon": 2.0, **KINDS[kind]}
    config = parse_config(_experiment({"kind": "linear_gaussian", "dim": 5, "n_arms": 4}, policy))
    record = run_single(config, 0, 0)
    assert record.horizon == 30 and np.isfinite(record.final_regret)
    assert record.metrics["claimed_epsilon"] == 2.0 and record.metrics["noise_std"] > 0
    huge = parse_config(  # a huge ε is a tiny noise, not an overflow (the paper's σ ∝ 1/ε; the analytic one is capped)
        _experiment({"kind": "linear_gaussian", "dim": 5, "n_arms": 4},
                    {**policy, "epsilon": 1e300, "calibration": "paper"})
    )
    assert run_single(huge, 0, 0).metrics["noise_std"] < 0.1


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_config_names_the_calibration_and_the_paper_default_keeps_the_stored_spec(kind):
    """The default is ``calibration = "analytic"`` (issue 47), in the run spec; ``"paper"`` (the default before) is
    left out of it, so runs stored then keep their keys, and a spec without the field runs at ``"paper"``."""
    from privbandits.experiments.registry import POLICY_KINDS
    from privbandits.protocols.dp.joint import joint_noise_std
    from privbandits.protocols.dp.local import local_noise_std

    env = {"kind": "linear_gaussian", "dim": 5, "n_arms": 4}
    policy = {"kind": kind, "epsilon": 2.0, **KINDS[kind]}
    default, paper, analytic = (parse_config(_experiment(env, policy | extra))
                                for extra in ({}, {"calibration": "paper"}, {"calibration": "analytic"}))  # fmt: skip
    assert "calibration" not in paper.policies[0].model_dump()
    assert default.policies[0].model_dump() == analytic.policies[0].model_dump()
    assert analytic.policies[0].model_dump()["calibration"] == "analytic"
    assert POLICY_KINDS.from_spec(paper.policies[0].model_dump()).calibration == "paper"
    stds = [run_single(config, 0, 0).metrics["noise_std"] for config in (paper, analytic)]
    if kind == "joint_dp_linucb":
        assert stds == [pytest.approx(joint_noise_std(2.0, 1e-5, 30, c, 5)) for c in ("paper", "analytic")]
    elif kind == "local_dp_linucb":
        assert stds == [pytest.approx(local_noise_std(2.0, 1e-5, c, 5)) for c in ("paper", "analytic")]
    assert 0 < stds[1] < stds[0]
    with pytest.raises(ConfigError, match=r"policies\[0\]\.calibration: must be one of 'paper' or 'analytic' "
                       r"\(got 'tight'\)"):  # fmt: skip
        parse_config(_experiment(env, policy | {"calibration": "tight"}))


def test_kinds_are_refused_where_they_cannot_run_and_name_bad_fields():
    with pytest.raises(ConfigError, match="keeps one θ over one context per arm; environment 'digits'"):
        parse_config(_experiment({"kind": "digits"}, {"kind": "local_dp_linucb"}))
    with pytest.raises(ConfigError, match="population"):
        parse_config(_experiment({"kind": "p2b_synthetic", "n_users": 50}, {"kind": "joint_dp_linucb"}))
    with pytest.raises(ConfigError) as info:
        parse_config(
            _experiment(
                {"kind": "linear_gaussian"},
                {"kind": "shuffle_dp_linucb", "epsilon": 0, "delta": 1, "batch_size": 2.0},
            )
        )
    text = str(info.value)
    assert "policies[0].epsilon: must be > 0.0 (got 0)" in text
    assert "policies[0].delta: must be < 1.0 (got 1)" in text
    assert "policies[0].batch_size: must be an integer (got 2.0)" in text


# -- utility ------------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_regret_grows_as_epsilon_shrinks(kind):
    """Final regret on the linear-Gaussian problem (d = 10, K = 10, T = 2000), mean over 5 seeds."""
    epsilons = (500.0, 50.0, 5.0, 0.5)
    extra = {"batch_size": 20} if kind == "shuffle_dp_linucb" else {}
    policies = [{"kind": kind, "label": f"eps{e:g}", "epsilon": e, **extra} for e in epsilons]
    data = _experiment({"kind": "linear_gaussian", "dim": 10, "n_arms": 10}, *policies, horizon=2000)
    data["seeds"] = [0, 1, 2, 3, 4]
    config = parse_config(data)
    means = [np.mean([run_single(config, i, seed).final_regret for seed in data["seeds"]]) for i in range(4)]
    print(kind, dict(zip(epsilons, np.round(means, 1), strict=True)))
    assert all(a < b for a, b in zip(means, means[1:], strict=False)), means
