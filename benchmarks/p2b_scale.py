"""P2B at scale: the Fig. 4 sweep for |A| = 10 up to 10^6 early users, against a plain per-user loop.

Runs the whole P2B simulation (``privbandits.protocols.p2b.core.simulate``: early
users' raw and encoded runs, reporting through the shuffler, the two server
models, and the late users cold, warm non-private and warm private) for the
reference's populations of early users 10^3, 5·10^3, …, 10^6 (total users =
early / 0.7, about 2.38·10^6 over the sweep, 1.43·10^6 at the last point),
d = 10, t = 10, k = 2^10, the reference's linear generator. It prints the time
and users per second of each point, the sweep's total time and peak resident
memory, and the users per second of the SAME pipeline written as a plain
per-user loop, measured on a smaller population in the same run, before and
after the sweep (the ratio is given against both): each user's
agent is its own ``LinUCB(layout="disjoint")`` (codes: its own (arm, code)
tables) stepped in Python, and each user's device encodes its own t contexts
(one ``encode`` call per user, as on a device). Reporting, shuffling and the
server are the same code in both. Targets (issue 4): sweep ≤ 10 minutes on 2
cores, peak memory ≤ 8 GiB, batched ≥ 50x the plain loop.

    python benchmarks/p2b_scale.py [--max-early 1000000] [--loop-users 3000] [--decimals 1]

``--decimals 1`` rounds every context to the q = 1 grid first, as the paper's
devices do (spec §2.4; the reference code does not for synthetic data): the
encoder then looks codes up instead of searching 1,024 centroids.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle kernel threads must not spin against the serial steps

import resource
import time
from unittest import mock

import numpy as np
from _smoke import parse_args

from privbandits.envs.p2b_synthetic import p2b_synthetic_interactions
from privbandits.linear import LinUCB
from privbandits.linear.population import DisjointModel, PopulationLog
from privbandits.privacy.encoding import ContextEncoder, fit_encoder, load_or_fit_encoder
from privbandits.protocols.p2b import core as p2b

EARLY_USERS = (1_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000)
N_ACTIONS, ROUNDS = 10, 10


def plain_run_population(model, contexts, reward_table, *, alpha=1.0, tie_break="random", rng=None, shared_agent=False):
    """The same agents, one user at a time in Python (the baseline a research script would write)."""
    rng = np.random.default_rng(rng)
    n_users, n_rounds = reward_table.shape[:2]
    arms = np.empty((n_users, n_rounds), dtype=np.int64)
    for user in range(n_users):
        if isinstance(model, DisjointModel):
            agent = LinUCB(model.n_arms, model.dim, alpha=alpha, layout="disjoint", tie_break=tie_break, rng=rng)
            agent.stats.load(model.A, model.b)
            for t in range(n_rounds):
                arms[user, t] = agent.select(contexts[user, t])
                agent.update(contexts[user, t], arms[user, t], reward_table[user, t, arms[user, t]])
        else:
            counts, sums = model.counts.astype(float), model.reward_sums.copy()
            for t in range(n_rounds):
                code = contexts[user, t]
                scores = sums[:, code] / (1 + counts[:, code]) + alpha / np.sqrt(1 + counts[:, code])
                tied = np.flatnonzero(scores >= scores.max() - 1e-9 * max(1.0, abs(scores.max())))
                arm = tied[rng.integers(len(tied))]
                arms[user, t] = arm
                counts[arm, code] += 1
                sums[arm, code] += reward_table[user, t, arm]
    rewards = np.take_along_axis(reward_table, arms[..., None], axis=2)[..., 0]
    return PopulationLog(arms, rewards)


class PerUserEncoder(ContextEncoder):
    """The encoder called once per user (t contexts at a time), as each device would."""

    @classmethod
    def of(cls, encoder: ContextEncoder) -> PerUserEncoder:
        return cls(encoder.centroids, encoder.precision, encoder.grid_points_per_code, encoder.grid_counts_exact)

    def encode(self, contexts: np.ndarray) -> np.ndarray:
        one_user = super().encode
        return np.concatenate([one_user(rows) for rows in np.split(contexts, len(contexts) // ROUNDS)])


def point(encoder: ContextEncoder, early: int, decimals: int | None, seed: int = 0):
    total = round(early / 0.7)
    start = time.perf_counter()
    data = p2b_synthetic_interactions(
        total, ROUNDS, encoder.dim, N_ACTIONS, mapping="linear", seed=seed, decimals=decimals
    )
    generated = time.perf_counter()
    outcome = p2b.simulate(data, encoder, p2b.P2BConfig(), seed=seed)
    done = time.perf_counter()
    return total, generated - start, done - generated, outcome


def plain_loop_rate(encoder, n_users: int, decimals: int | None) -> float:
    """Users per second of the plain per-user loop on ``n_users`` total users (printed)."""
    with mock.patch.object(p2b, "run_population", plain_run_population):
        users, gen, sim, _ = point(PerUserEncoder.of(encoder), round(n_users * 0.7), decimals)
    print(f"plain per-user loop: {users} users in {gen + sim:.1f} s = {users / (gen + sim):,.0f} users/s")
    return users / (gen + sim)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-early", type=int, default=1_000_000)
    parser.add_argument("--loop-users", type=int, default=3000, help="total users of the plain-loop baseline")
    parser.add_argument(
        "--decimals",
        type=int,
        default=None,
        help="round the contexts to q digits, as the paper's devices do (default: unrounded, as the reference code)",
    )
    parser.add_argument("--dim", type=int, default=10, help="context dimension d (default 10)")
    parser.add_argument("--codes", type=int, default=1024, help="encoder codes k (default 1024)")
    parser.add_argument("--encode-users", type=int, default=100_000, help="users of the encoding-alone measurement")
    args = parse_args(parser, max_early=1_000, loop_users=70, dim=4, codes=16, encode_users=1_000)
    contexts = "unrounded contexts" if args.decimals is None else f"contexts rounded to q = {args.decimals}"
    print(
        f"P2B scale, |A| = {N_ACTIONS}, d = {args.dim}, t = {ROUNDS}, k = {args.codes}, {contexts}; "
        f"{os.cpu_count()} cores"
    )
    start = time.perf_counter()  # a smoke run fits its small encoder without touching the encoder cache
    encoder = fit_encoder(args.dim, 1, args.codes) if args.smoke else load_or_fit_encoder(args.dim, 1, args.codes)
    print(
        f"encoder (d={args.dim}, q=1, k={args.codes}) loaded or fitted in {time.perf_counter() - start:.1f} s "
        f"(cached after the first run; min grid points per code {encoder.min_crowd})"
    )

    point(encoder, 700, args.decimals)  # compile the kernels outside the timings
    with mock.patch.object(p2b, "run_population", plain_run_population):
        point(PerUserEncoder.of(encoder), 70, args.decimals)  # load the plain learner's kernels too
    loop_rates = [plain_loop_rate(encoder, args.loop_users, args.decimals)]
    loop_rate = loop_rates[0]
    sample = p2b_synthetic_interactions(
        args.encode_users, ROUNDS, args.dim, N_ACTIONS, mapping="linear", seed=1, decimals=args.decimals
    ).contexts
    start = time.perf_counter()
    encoder.encode(sample.reshape(-1, args.dim))
    encode_rate = len(sample) / (time.perf_counter() - start)
    print(
        f"encoding alone (each user's {ROUNDS} contexts, nearest of {args.codes} centroids): "
        f"{encode_rate:,.0f} users/s, "
        f"so a pipeline that encodes every context is at most {encode_rate / loop_rate:.0f}x the plain loop"
    )

    columns = "   cold    warm NP  warm P   shared  released"
    header = f"{'early':>9} {'total':>9} {'gen s':>7} {'sim s':>7} {'users/s':>9}{columns}"
    print(header)
    print("-" * len(header))
    sweep_start, users = time.perf_counter(), 0
    for early in (e for e in EARLY_USERS if e <= args.max_early):
        total, gen, sim, out = point(encoder, early, args.decimals)
        users += total
        print(
            f"{early:>9,} {total:>9,} {gen:>7.1f} {sim:>7.1f} {total / (gen + sim):>9,.0f}   "
            f"{out.cold.mean:.5f} {out.warm_non_private.mean:.5f} {out.warm_private.mean:.5f} "
            f"{out.encoded_tuples_shared:>8,} {out.release['released']:>9,}"
        )
    sweep = time.perf_counter() - sweep_start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB → GiB on Linux
    rate = users / sweep
    print("-" * len(header))
    print(f"sweep: {users:,} users in {sweep:.1f} s ({sweep / 60:.1f} min; target <= 10 min) = {rate:,.0f} users/s")
    print(f"peak resident memory {peak:.2f} GiB (target <= 8 GiB)")
    loop_rates.append(plain_loop_rate(encoder, args.loop_users, args.decimals))  # again: machines drift
    print(
        f"batched / plain loop: {rate / max(loop_rates):.0f}x against the faster of the two loop measurements, "
        f"{rate / min(loop_rates):.0f}x against the slower (target >= 50x)"
    )


if __name__ == "__main__":
    main()
