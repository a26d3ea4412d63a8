"""Noise of joint-DP LinUCB's two continual releases at equal (ε, δ): the binary tree against the square-root
matrix factorization (:mod:`privbandits.privacy.factorization`), by ε and horizon T.

Both calibrated as the learner calibrates them (analytic Gaussian, data snapped to the noise's grid, d = 10:
``z zᵀ`` of 66 independent coordinates). Per coordinate of the released prefix sum, the tree's noise variance at
round t is ``popcount(t)·σ_tree²``, the factorization's ``σ² Σ_{k<t} c_k²``; printed: their ratio (tree over
factorization: above 1, the factorization is the quieter) at round T, averaged over the rounds (mean over mean)
and at each one's worst round, the share of rounds where the tree is the quieter, and how much of the
factorization's sensitivity is the snapping of its rows (``g·√(nT)``, which grows with T and with σ, so with 1/ε).
Then the time per release of each mechanism at the largest T (the machine's load moves it).

Run ``python benchmarks/continual_release_noise.py [--epsilons 0.1 1 10] [--horizons 256 20000 200000]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _smoke import parse_args

from privbandits.privacy.factorization import SqrtFactorization, factorization_noise, sqrt_coefficients
from privbandits.privacy.tree_mechanism import REPLACE_SENSITIVITY, TreeMechanism, augmented_coordinates
from privbandits.protocols.dp.joint import joint_noise_std
from privbandits.validation import Integer

DIM, DELTA = 10, 1e-5


def ratios(epsilon: float, horizon: int) -> tuple[float, float, float, float, float]:
    """(at T, mean, worst, share of rounds the tree is quieter, snapping's share of the sensitivity)."""
    noise = factorization_noise(epsilon, DELTA, horizon, REPLACE_SENSITIVITY, augmented_coordinates(DIM), 1.0)
    tree_std = joint_noise_std(epsilon, DELTA, horizon, "analytic", dim=DIM)
    c = sqrt_coefficients(horizon)
    ours = noise.std**2 * np.cumsum(c * c)
    tree = np.array([t.bit_count() for t in range(1, horizon + 1)]) * tree_std**2
    base = REPLACE_SENSITIVITY * noise.column_norm
    return (tree[-1] / ours[-1], tree.mean() / ours.mean(), tree.max() / ours.max(), float(np.mean(tree <= ours)),
            (noise.sensitivity - base) / noise.sensitivity)  # fmt: skip


def per_release(horizon: int, releases: int) -> tuple[float, float]:
    """Seconds per release of the tree and of the factorization over the first ``releases`` of ``horizon``."""
    rng = np.random.default_rng(0)
    noise = factorization_noise(1.0, DELTA, horizon, REPLACE_SENSITIVITY, augmented_coordinates(DIM), 1.0)
    tree = TreeMechanism(DIM + 1, joint_noise_std(1.0, DELTA, horizon, "analytic", dim=DIM), rng)
    ours = SqrtFactorization(noise, (DIM + 1, DIM + 1), rng, symmetric=True)
    datum = np.outer(np.full(DIM + 1, 0.3), np.full(DIM + 1, 0.3))
    TreeMechanism(DIM + 1, tree.std, rng).release()  # the sampler's table and compiled search, built once
    start = time.perf_counter()
    for _ in range(releases):
        tree.release()
    middle = time.perf_counter()
    for _ in range(releases):
        ours.release(datum)
    return (middle - start) / releases, (time.perf_counter() - middle) / releases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0, 10.0], help="ε (default 0.1 1 10)")
    parser.add_argument("--horizons", type=int, nargs="+", default=[256, 20_000, 200_000],
                        help="T (default 256 20000 200000)")  # fmt: skip
    parser.add_argument("--timed", type=int, default=20_000, help="releases timed at the largest T (default 20,000)")
    args = parse_args(parser, {"timed": Integer(1)}, horizons=[256, 2000], timed=200)
    print(f"tree / factorization noise variance per coordinate, d = {DIM}, δ = {DELTA:g}, analytic, snapped")
    print(f"{'ε':>6} {'T':>8} {'at T':>7} {'mean':>7} {'worst':>7} {'tree quieter':>13} {'snapping':>9}")
    for epsilon in args.epsilons:
        for horizon in args.horizons:
            at_t, mean, worst, quieter, snapping = ratios(epsilon, horizon)
            print(f"{epsilon:6g} {horizon:8,} {at_t:7.2f} {mean:7.2f} {worst:7.2f} {100 * quieter:12.2f}% "
                  f"{100 * snapping:8.1f}%")  # fmt: skip
    horizon = max(args.horizons)
    tree, ours = per_release(horizon, min(args.timed, horizon))
    print(f"time per release over the first {min(args.timed, horizon):,} of T = {horizon:,}: tree {1e6 * tree:.0f} µs, "
          f"factorization {1e6 * ours:.0f} µs ({ours / tree:.1f}× the tree's)")  # fmt: skip


if __name__ == "__main__":
    main()
