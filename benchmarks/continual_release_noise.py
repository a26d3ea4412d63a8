"""Noise of joint-DP LinUCB's two continual releases at equal (ε, δ): the binary tree against the square-root
matrix factorization (:mod:`privbandits.privacy.factorization`), by d, ε and horizon T.

Both calibrated as the learner calibrates them (analytic Gaussian, data snapped to the noise's grid; ``z zᵀ`` of
(d + 1)(d + 2)/2 independent coordinates). Per coordinate of the released prefix sum, the tree's noise variance at
round t is ``popcount(t)·σ_tree²``, the factorization's ``σ² Σ_{k<t} H_k²`` (H the decoder's coefficients: C's
own for the full factor). For each (d, ε, T) two rows: the full factor (band T) and the band the learner chooses
by default. Printed: the band; the tree's variance over the factorization's (above 1, the factorization is the
quieter) at round T, averaged over the rounds (mean over mean) and at each one's worst round; the share of rounds
where the tree is the quieter; and how much of the factorization's sensitivity is the snapping of its rows
(``g·√(n·b)``, which grows with the band and with σ, so with 1/ε). Then the time per release of each mechanism at
the largest T and d, with the chosen band (the machine's load moves it).

Run ``python benchmarks/continual_release_noise.py [--dims 10 100] [--epsilons 0.1 1 10]
[--horizons 256 20000 200000]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _smoke import parse_args

from privbandits.privacy.factorization import SqrtFactorization, decoder_coefficients, factorization_noise
from privbandits.privacy.tree_mechanism import REPLACE_SENSITIVITY, TreeMechanism, augmented_coordinates
from privbandits.protocols.dp.joint import joint_noise_std
from privbandits.validation import Integer

DELTA = 1e-5


def ratios(dim: int, epsilon: float, horizon: int, band: int | None) -> tuple[int, float, float, float, float, float]:
    """(band, at T, mean, worst, share of rounds the tree is quieter, snapping's share of the sensitivity)."""
    noise = factorization_noise(epsilon, DELTA, horizon, REPLACE_SENSITIVITY, augmented_coordinates(dim), 1.0, band)
    tree_std = joint_noise_std(epsilon, DELTA, horizon, "analytic", dim=dim)
    h = decoder_coefficients(horizon, noise.bandwidth)
    ours = noise.std**2 * np.cumsum(h * h)
    tree = np.array([t.bit_count() for t in range(1, horizon + 1)]) * tree_std**2
    base = REPLACE_SENSITIVITY * noise.column_norm
    return (noise.bandwidth, tree[-1] / ours[-1], tree.mean() / ours.mean(), tree.max() / ours.max(),
            float(np.mean(tree <= ours)), (noise.sensitivity - base) / noise.sensitivity)  # fmt: skip


def per_release(dim: int, horizon: int, releases: int) -> tuple[float, float, int]:
    """Seconds per release of the tree and of the factorization (its chosen band, returned) over the first
    ``releases`` of ``horizon``."""
    rng = np.random.default_rng(0)
    noise = factorization_noise(1.0, DELTA, horizon, REPLACE_SENSITIVITY, augmented_coordinates(dim), 1.0)
    tree = TreeMechanism(dim + 1, joint_noise_std(1.0, DELTA, horizon, "analytic", dim=dim), rng)
    ours = SqrtFactorization(noise, (dim + 1, dim + 1), rng, symmetric=True)
    datum = np.full(dim + 1, 0.3 / dim**0.5)  # z of the datum z zᵀ
    TreeMechanism(dim + 1, tree.std, rng).release()  # the sampler's table and compiled search, built once
    start = time.perf_counter()
    for _ in range(releases):
        tree.release()
    middle = time.perf_counter()
    for _ in range(releases):
        ours.release_outer(datum)
    return (middle - start) / releases, (time.perf_counter() - middle) / releases, noise.bandwidth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[10, 100], help="d (default 10 100)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0, 10.0], help="ε (default 0.1 1 10)")
    parser.add_argument("--horizons", type=int, nargs="+", default=[256, 20_000, 200_000],
                        help="T (default 256 20000 200000)")  # fmt: skip
    parser.add_argument("--timed", type=int, default=20_000, help="releases timed at the largest T (default 20,000)")
    args = parse_args(parser, {"timed": Integer(1)}, dims=[10], horizons=[256, 2000], timed=200)
    print(f"tree / factorization noise variance per coordinate, δ = {DELTA:g}, analytic, snapped")
    print(f"{'d':>4} {'ε':>6} {'T':>8} {'band':>8} {'at T':>9} {'mean':>9} {'worst':>9} {'tree quieter':>13} "
          f"{'snapping':>9}")  # fmt: skip
    for dim in args.dims:
        for epsilon in args.epsilons:
            for horizon in args.horizons:
                for band in (horizon, None):
                    b, at_t, mean, worst, quieter, snapping = ratios(dim, epsilon, horizon, band)
                    print(f"{dim:4} {epsilon:6g} {horizon:8,} {b:8,} {at_t:9.3g} {mean:9.3g} {worst:9.3g} "
                          f"{100 * quieter:12.2f}% {100 * snapping:8.1f}%")  # fmt: skip
    horizon, dim = max(args.horizons), max(args.dims)
    tree, ours, band = per_release(dim, horizon, min(args.timed, horizon))
    print(f"time per release over the first {min(args.timed, horizon):,} of T = {horizon:,}, d = {dim}: tree "
          f"{1e6 * tree:.0f} µs, factorization (band {band:,}) {1e6 * ours:.0f} µs ({ours / tree:.1f}× the tree's)")


if __name__ == "__main__":
    main()
