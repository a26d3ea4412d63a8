"""Snapping to the noise grid datum by datum (issue 31 follow-up): a release is the exact sum of data each snapped
to the grid plus the tree's noise, so two neighbours differ by the same matrix at every release after the datum
where they differ (only the tree nodes that hold it differ), every release lies on its grid, and every Gaussian
calibration holds at the snapped datum's sensitivity ``Δ + g√n`` (privacy/calibration.py's snapped_std).

Snapping the running prefix instead rounds it anew after every datum: the neighbours' released statistics then
differ at every later release by D plus a different rounding, so every later tree node differs, not m of them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from privbandits.comm import InMemoryNetwork
from privbandits.privacy.noise import grid_step
from privbandits.protocols.dp import JointDPLinUCB, LocalDPLinUCB
from privbandits.protocols.fclub.config import Calibration, FCLUBConfig
from privbandits.protocols.fclub.local_server import LocalServer
from privbandits.protocols.fclub.messages import GLOBAL, PhaseUpload

DIM, HORIZON, CHANGED = 6, 120, 17
"""Context dimension, rounds, and the round (1-based) where the neighbouring inputs differ."""


def _data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """HORIZON contexts in the unit ball and rewards in [-1, 1], and a neighbour that differs at round CHANGED."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(HORIZON, DIM))
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1.0) * 1.3
    return x, rng.uniform(-1, 1, HORIZON)


def _neighbours(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    x, y = _data(seed)
    x2, y2 = x.copy(), y.copy()
    x2[CHANGED - 1] = -0.7 * x[CHANGED - 1][::-1]
    y2[CHANGED - 1] = -y[CHANGED - 1] / 2
    return [(x, y), (x2, y2)]


def _on_grid(values: np.ndarray, step: float) -> bool:
    units = np.asarray(values) / step
    return bool(np.array_equal(units, np.round(units)))


# -- joint DP: the released prefix sums -------------------------------------------------------------------------
def _joint_releases(x: np.ndarray, y: np.ndarray, **options) -> tuple[JointDPLinUCB, list[np.ndarray]]:
    """The released (Gram, moment) of every round, as one (d, d+1) array each; the noise's rng seeded alike."""
    learner = JointDPLinUCB(1, DIM, epsilon=1.0, delta=1e-5, horizon=HORIZON, rng=7, **options)
    released = []
    for t in range(HORIZON):
        learner.update(x[t][None, :], 0, float(y[t]))
        released.append(np.column_stack([learner.gram, learner.u]))
    return learner, released


@pytest.mark.parametrize("calibration", ["paper", "analytic"])
def test_joint_dp_neighbours_differ_by_the_same_matrix_at_every_release_after_the_datum(calibration):
    """Same rng, so the same tree noise: release_A − release_B is the pre-noise difference, 0 before round s and
    one fixed matrix (the snapped datum's difference) at every release from s on."""
    (_, first), (_, second) = (_joint_releases(x, y, calibration=calibration) for x, y in _neighbours())
    differences = [a - b for a, b in zip(first, second, strict=True)]
    assert all(not d.any() for d in differences[: CHANGED - 1])
    changed = differences[CHANGED - 1]
    assert np.abs(changed).max() > 0.1
    assert [t + 1 for t, d in enumerate(differences) if t >= CHANGED - 1 and not np.array_equal(d, changed)] == []


def test_joint_dp_releases_lie_exactly_on_the_grid_of_their_noise():
    learner, released = _joint_releases(*_neighbours()[0])
    step = grid_step(learner.noise_std)
    assert all(_on_grid(r, step) for r in released)
    assert not _on_grid(released[-1] + step / 3, step)  # the check can fail


def test_local_dp_reports_lie_exactly_on_the_grid_of_their_noise():
    (x, y), _ = _neighbours()
    learner = LocalDPLinUCB(1, DIM, epsilon=1.0, delta=1e-5, horizon=HORIZON, rng=3)
    step = grid_step(learner.noise_std)
    for t in range(5):
        gram, vector = learner.randomizer.report(x[t], float(y[t]))
        assert _on_grid(gram, step) and _on_grid(vector, step)


# -- FCLUB: a local server's phase uploads (the cluster's sums over its users, every phase start) ---------------
def _phase_statistics(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    """One local server, one cluster of 3 users, a phase upload every 8 rounds: each upload minus the phase-start
    release H̃ of its privatizer (the pre-noise statistic), as one (d, d+1) array. The data reach the server
    through ``observe`` alone, so both neighbours see the same data except at round CHANGED."""
    config = FCLUBConfig.for_variant("cdp-fclub-dc", horizon=HORIZON, detect_clusters=False)
    network = InMemoryNetwork()
    network.register(GLOBAL)
    server = LocalServer("local0", network, np.arange(3), DIM, Calibration(config, DIM, 3, 1),
                         np.random.default_rng(5))  # fmt: skip
    statistics = []
    for t in range(HORIZON):
        if t % 8 == 0:
            with network.phase("detect"):
                server.detect(t + 1)
            upload = network.receive(GLOBAL, PhaseUpload)
            (cluster,) = server.clusters.values()
            statistics.append(np.column_stack([upload.gram - cluster.H_tilde, upload.moment - cluster.h_tilde]))
        server.observe(t % 3, x[t], float(y[t]))
    return statistics


def test_fclub_neighbours_phase_uploads_differ_by_the_same_matrix_after_the_datum():
    first, second = (_phase_statistics(x, y) for x, y in _neighbours(1))
    differences = [a - b for a, b in zip(first, second, strict=True)]
    after = CHANGED // 8 + 1  # the first phase upload that holds round CHANGED
    assert all(not d.any() for d in differences[:after])
    changed = differences[after]
    assert np.abs(changed).max() > 0.1
    assert [k for k, d in enumerate(differences) if k >= after and not np.array_equal(d, changed)] == []


# -- calibration at the snapped datum's sensitivity ---------------------------------------------------------------
def _analytic_delta(std: float, sensitivity: float, epsilon: float) -> float:
    """δ of a Gaussian mechanism at ε (Balle & Wang 2018, Thm 8): Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ)."""
    a, b = sensitivity / (2 * std), epsilon * std / sensitivity
    return float(norm.cdf(a - b) - math.exp(epsilon) * norm.cdf(-a - b))


def _joint_case(epsilon: float, dim: int) -> tuple[float, float, int]:
    horizon = 10**5
    std = JointDPLinUCB(2, dim, epsilon=epsilon, delta=1e-5, horizon=horizon, calibration="analytic").noise_std
    n = (dim + 1) * (dim + 2) // 2  # z zᵀ's upper triangle
    return std, min(2 + grid_step(std) * math.sqrt(n), 2 * math.sqrt(2)), 1 + math.ceil(math.log2(horizon))


def _local_case(epsilon: float, dim: int) -> tuple[float, float, int]:
    std = LocalDPLinUCB(2, dim, epsilon=epsilon, delta=1e-5, horizon=10, calibration="analytic").noise_std
    n = dim * (dim + 1) // 2 + dim  # x xᵀ's upper triangle and r x
    return std, min(math.sqrt(6) + grid_step(std) * math.sqrt(n), 2 * math.sqrt(2)), 1


def _fclub_case(epsilon: float, dim: int) -> tuple[float, float, int]:
    config = FCLUBConfig(epsilon=epsilon, delta=1e-5, horizon=2000, noise_variance="analytic")
    calibration = Calibration(config, dim, 40, 5)
    depth = calibration.depth(1)
    std = calibration.noise_std(depth)
    n = dim * (dim + 3) // 2  # x xᵀ's upper triangle and y x
    return std, min(2 + grid_step(std) * math.sqrt(n), 2 * math.sqrt(2)), depth


@pytest.mark.parametrize("case", [_joint_case, _local_case, _fclub_case], ids=["joint", "local", "fclub"])
@pytest.mark.parametrize("epsilon, dim", [(0.1, 100), (1.0, 10), (1.0, 100), (10.0, 100)])
def test_the_analytic_calibration_holds_at_the_snapped_sensitivity_and_not_with_1_percent_less_noise(
    case, epsilon, dim
):
    """σ is (ε, δ)-DP for k releases of sensitivity Δ + g√n (capped at 2√2: no datum snapped toward zero is
    larger than the datum), and 0.99σ is not: the calibration is tight at the slack."""
    std, sensitivity, compositions = case(epsilon, dim)
    effective = sensitivity * math.sqrt(compositions)
    assert _analytic_delta(std, effective, epsilon) <= 1e-5 * (1 + 1e-6)
    assert _analytic_delta(0.99 * std, effective, epsilon) > 1e-5


# -- the fixed point, its cap, and exactness ----------------------------------------------------------------------
@pytest.mark.parametrize("std", [1e-3, 1.0, 3.7, 357.0, 1e4])
@pytest.mark.parametrize("coordinates", [3, 66, 5151])
def test_snapped_std_is_the_fixed_point_at_the_capped_slack(std, coordinates):
    from privbandits.privacy.calibration import snapped_std

    sigma = snapped_std(std, 2.0, coordinates, 2 * math.sqrt(2))
    sensitivity = min(2.0 + grid_step(sigma) * math.sqrt(coordinates), 2 * math.sqrt(2))
    assert sigma == std / 2.0 * sensitivity  # exactly: the iteration stopped where it maps to itself
    assert std < sigma <= std * math.sqrt(2)


def test_a_sigma_too_small_for_exact_sums_snaps_to_a_coarser_grid_at_the_cap():
    """Far beyond any claim (σ ~ 1e-299): σ's grid cannot hold T·1 exactly, so the data go on the finest exact
    grid, a multiple of the noise's, and σ is calibrated at the cap, which holds on every grid."""
    from privbandits.privacy.calibration import snapped_noise
    from privbandits.privacy.noise import EXACT_STEPS, check_exact

    noise = snapped_noise(1e-299, 2.0, 10, 2 * math.sqrt(2), 1e5, 20 * 18)
    assert noise.std == 1e-299 / 2 * (2 * math.sqrt(2)) and noise.sensitivity == 2 * math.sqrt(2)
    total = 1e5 + 20 * 18 * noise.std
    assert noise.grid >= grid_step(noise.std) and total / noise.grid < EXACT_STEPS <= 2 * total / noise.grid
    with pytest.raises(ValueError, match=r"^JointDPLinUCB: values up to 1e\+06 on a grid of step 1e-20 need 1e\+26"):
        check_exact(1e6, 1e-20, "JointDPLinUCB")


def test_fclub_data_grid_is_the_coarsest_noise_grid_so_each_tree_shifts_by_whole_steps():
    """With ν depending on the phase start, trees of several σ share one data grid: the deepest tree's, which
    every other tree's noise grid divides (a datum snapped to it moves each release by whole noise steps), and
    each σ is its form's σ scaled to the sensitivity on that grid."""
    config = FCLUBConfig.for_variant("cdp-fclub-dc", horizon=5000, tree_depth="reference")
    calibration = Calibration(config, 10, 40, 5)
    depths = sorted({calibration.depth(t) for t in range(1, 5001)})
    assert len(depths) >= 3
    assert calibration.data_grid == grid_step(calibration.noise_std(depths[-1]))
    sensitivity = calibration.effective_sensitivity()
    assert sensitivity == 2 + calibration.data_grid * math.sqrt(10 * 13 / 2)
    for depth in depths:
        assert calibration.data_grid % grid_step(calibration.noise_std(depth)) == 0
        assert calibration.noise_std(depth) == pytest.approx(calibration.form_std(depth) * sensitivity / 2, rel=1e-15)
