"""The vertical paper's App. C.3 table: seconds per "statistic utility calculation".

For each setting, M = 5 parties with equal blocks compute the LinUCB
statistics (``x_a^T theta`` and ``sqrt(x_a^T A^{-1} x_a)`` for all K arms) in N
rounds, with each method of :mod:`privbandits.privacy.alternatives`:

O3M
    mask, send, sum, score on the masked state (lossless);
HE
    Paillier (python-paillier) with a key holder that is not the AP;
MPC
    the project's MPC engine (additive shares over Z_2^64, a trusted dealer,
    every opening a message): the parties share their blocks, the AP's state is
    shared at setup, the AP receives the two statistics (exact up to 2^-20);
DP
    Gaussian noise on the passive blocks (lossy; its error is reported).

The paper leaves N undefined (spec ``vertical-o3m.md`` §8.4.16); here N is the
number of rounds, each with fresh contexts and one shared ridge state (100
past rounds). Setup (mask, keys, state) is not timed. HE at the small setting
is measured on ``--he-arms`` arms and extrapolated linearly to all K·N arm
statistics (every arm costs the same operations) unless ``--full`` is given;
the paper did not run HE at the large setting, and neither do we unless
``--he-large-arms`` is given.

Run ``python benchmarks/vertical_alternatives.py [--he-arms 1] [--full]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from _smoke import bench_extra, parse_args
from rich import box
from rich.console import Console
from rich.table import Table
from threadpoolctl import threadpool_limits

from privbandits.privacy.masks import draw_mask, split_columns

with bench_extra("vertical_alternatives.py"):  # phe, the Paillier library
    import phe.util

    from privbandits.privacy.alternatives import (
        KeyHolder,
        PaillierProfile,
        RoundInput,
        RoundStatistics,
        dp_statistics,
        gaussian_sigma,
        masked_state,
        mpc_engine,
        mpc_statistics,
        o3m_statistics,
        paillier_statistics,
        plaintext_statistics,
        random_round,
        share_state,
    )

N_PARTIES = 5
HISTORY = 100
ALPHA = 0.5  # the paper's β, for the "same arm" check of DP


@dataclass(frozen=True)
class Setting:
    name: str
    dim: int
    n_arms: int
    n_rounds: int
    paper: dict[str, float | None]  # seconds reported in App. C.3 (None: not run)

    @property
    def partition(self) -> tuple[int, ...]:
        return (self.dim // N_PARTIES,) * N_PARTIES


SETTINGS = (
    Setting("small", 100, 20, 5, {"O3M": 0.006, "HE": 1190.0, "MPC": 2.282, "DP": 0.005}),
    Setting("large", 500, 10, 500, {"O3M": 7.28, "HE": None, "MPC": 103.0, "DP": 6.48}),
)


def draw_rounds(setting: Setting, rng: np.random.Generator) -> list[RoundInput]:
    """N rounds of fresh unit-norm contexts sharing one ridge state fitted on ``HISTORY`` rounds."""
    state = random_round(setting.partition, setting.n_arms, rng, history=HISTORY)
    rounds = [state]
    for _ in range(setting.n_rounds - 1):
        contexts = rng.standard_normal((setting.n_arms, setting.dim))
        contexts /= np.linalg.norm(contexts, axis=1, keepdims=True)
        blocks = np.split(contexts, np.cumsum(setting.partition)[:-1], axis=1)
        rounds.append(RoundInput(tuple(np.ascontiguousarray(b) for b in blocks), state.A_inv, state.theta))
    return rounds


def fastest(run: Callable[[], object], repeat: int) -> float:
    """Fastest of ``repeat`` timed calls, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


@dataclass
class HEResult:
    seconds: float | None = None
    measured_arms: int = 0
    total_arms: int = 0
    max_error: float = float("nan")
    profile: PaillierProfile | None = None


def time_paillier(rounds: list[RoundInput], key_holder: KeyHolder, arms: int | None) -> HEResult:
    """Paillier over every arm of every round (``arms=None``) or over the first ``arms`` arms of round 1."""
    total = sum(len(r.blocks[0]) for r in rounds)
    if arms is not None:
        rounds = [RoundInput(tuple(b[:arms] for b in rounds[0].blocks), rounds[0].A_inv, rounds[0].theta)]
    profile = PaillierProfile()
    start = time.perf_counter()
    stats = [paillier_statistics(r.blocks, r.A_inv, r.theta, key_holder, profile=profile) for r in rounds]
    seconds = time.perf_counter() - start
    error = max(
        s.max_error(plaintext_statistics(r.blocks, r.A_inv, r.theta)) for s, r in zip(stats, rounds, strict=True)
    )
    measured = sum(len(r.blocks[0]) for r in rounds)
    return HEResult(seconds * total / measured, measured, total, error, profile)


@dataclass
class MPCResult:
    seconds: float
    max_error: float
    same_arm: float
    rounds_per_round: float
    bytes_per_round: float


def time_mpc(rounds: list[RoundInput], repeat: int, seed: int) -> MPCResult:
    """The MPC statistics of every round (fastest of ``repeat``; the state is shared once, untimed)."""
    best, stats, engine = float("inf"), [], None
    for attempt in range(repeat):
        engine = mpc_engine(N_PARTIES, seed=seed + attempt)
        state = share_state(engine, rounds[0].A_inv, rounds[0].theta)
        start = time.perf_counter()
        stats = [mpc_statistics(r.blocks, engine, state) for r in rounds]
        best = min(best, time.perf_counter() - start)
    exact = [plaintext_statistics(r.blocks, r.A_inv, r.theta) for r in rounds]
    error = max(s.max_error(e) for s, e in zip(stats, exact, strict=True))
    same = sum(s.ucb_arm(ALPHA) == e.ucb_arm(ALPHA) for s, e in zip(stats, exact, strict=True)) / len(rounds)
    traffic = engine.traffic
    per_round = sum(traffic.rounds[phase] / traffic.segments[phase] for phase in ("round", "reveal"))
    per_bytes = traffic.per_segment("round") + traffic.per_segment("reveal")
    return MPCResult(best, error, same, per_round, per_bytes)


def dp_errors(rounds: list[RoundInput], args: argparse.Namespace) -> tuple[float, float, float]:
    """Max |error| of the estimates and the widths, and the share of rounds whose UCB arm is unchanged."""
    rng = np.random.default_rng(args.seed + 1)
    est, wid, same = 0.0, 0.0, 0
    for r in rounds:
        exact = plaintext_statistics(r.blocks, r.A_inv, r.theta)
        noisy = dp_statistics(r.blocks, r.A_inv, r.theta, epsilon=args.epsilon, delta=args.delta, rng=rng)
        est = max(est, float(np.max(np.abs(noisy.estimates - exact.estimates))))
        wid = max(wid, float(np.max(np.abs(noisy.widths - exact.widths))))
        same += noisy.ucb_arm(ALPHA) == exact.ucb_arm(ALPHA)
    return est, wid, same / len(rounds)


def run_setting(setting: Setting, args: argparse.Namespace, key_holder: KeyHolder, console: Console) -> dict:
    rng = np.random.default_rng(args.seed)
    rounds = draw_rounds(setting, rng)
    mask = draw_mask(setting.partition, rng=rng)
    mask_blocks = split_columns(mask, setting.partition)
    masked = masked_state(mask, rounds[0].A_inv, rounds[0].theta)
    dp_rng = np.random.default_rng(args.seed + 2)

    def o3m() -> list[RoundStatistics]:
        return [o3m_statistics(r.blocks, mask_blocks, *masked) for r in rounds]

    def dp() -> list[RoundStatistics]:
        kwargs = {"epsilon": args.epsilon, "delta": args.delta, "rng": dp_rng}
        return [dp_statistics(r.blocks, r.A_inv, r.theta, **kwargs) for r in rounds]

    def plain() -> list[RoundStatistics]:
        return [plaintext_statistics(r.blocks, r.A_inv, r.theta) for r in rounds]

    o3m_error = max(s.max_error(p) for s, p in zip(o3m(), plain(), strict=True))
    seconds = {"plain": fastest(plain, args.repeat), "O3M": fastest(o3m, args.repeat), "DP": fastest(dp, args.repeat)}
    console.print(f"[{setting.name}] MPC over {setting.n_rounds} rounds ...")
    mpc = time_mpc(rounds, min(args.repeat, 3), args.seed)
    A = np.linalg.inv(rounds[0].A_inv)
    inverse = fastest(lambda: np.linalg.inv(A), args.repeat) * setting.n_rounds
    he_arms = args.he_arms if setting.name == "small" else args.he_large_arms
    he = HEResult()
    if setting.name == "small" and args.full:
        console.print(f"[{setting.name}] HE on all {setting.n_arms * setting.n_rounds} arm statistics ...")
        he = time_paillier(rounds, key_holder, None)
    elif he_arms > 0:
        console.print(f"[{setting.name}] HE on {he_arms} arm(s) of round 1 ...")
        he = time_paillier(rounds, key_holder, min(he_arms, setting.n_arms))
    return {
        "setting": setting,
        "seconds": seconds,
        "o3m_error": o3m_error,
        "he": he,
        "mpc": mpc,
        "dp": dp_errors(rounds, args),
        "inverse": inverse,
    }


def he_cell(he: HEResult) -> tuple[str, str]:
    if he.seconds is None:
        return "–", "not run (as in the paper)"
    if he.measured_arms == he.total_arms:
        return f"{he.seconds:.1f}", f"all {he.total_arms} arms measured; max error {he.max_error:.1e}"
    note = f"extrapolated from {he.measured_arms} measured arm(s) of {he.total_arms}; max error {he.max_error:.1e}"
    return f"{he.seconds:.0f}", note


def ratio(value: float | None, base: float) -> str:
    if value is None:
        return "–"
    return f"{value / base:,.0f}" if value >= 100 * base else f"{value / base:.2f}"


def report(results: list[dict], args: argparse.Namespace, key_seconds: float, console: Console) -> None:
    table = Table(
        title="App. C.3: seconds per statistic utility calculation (N rounds, M = 5, equal blocks)", box=box.MARKDOWN
    )
    for column in ("setting", "method", "ours (s)", "ours / O3M", "paper (s)", "paper / O3M", "note"):
        table.add_column(column, justify="left" if column in ("setting", "method", "note") else "right")
    for result in results:
        setting, seconds = result["setting"], result["seconds"]
        label = f"{setting.name} d={setting.dim} K={setting.n_arms} N={setting.n_rounds}"
        base, paper_base = seconds["O3M"], setting.paper["O3M"]
        he_seconds, he_note = he_cell(result["he"])
        est, wid, same = result["dp"]
        mpc = result["mpc"]
        rows = [
            ("plaintext LinUCB", f"{seconds['plain']:.4f}", ratio(seconds["plain"], base), None, "no privacy"),
            ("O3M", f"{base:.4f}", "1.00", paper_base, f"max error {result['o3m_error']:.1e}"),
            ("HE (Paillier)", he_seconds, ratio(result["he"].seconds, base), setting.paper["HE"], he_note),
            (
                "MPC (ours)",
                f"{mpc.seconds:.4f}",
                ratio(mpc.seconds, base),
                setting.paper["MPC"],
                f"max error {mpc.max_error:.1e}; {mpc.rounds_per_round:.0f} comm. rounds, "
                f"{mpc.bytes_per_round / 1e3:,.0f} kB per round",
            ),
            (
                "DP (Gaussian)",
                f"{seconds['DP']:.4f}",
                ratio(seconds["DP"], base),
                setting.paper["DP"],
                f"max error r {est:.2g}, w {wid:.2g}; same UCB arm in {same:.0%} of rounds",
            ),
        ]
        for i, (method, ours, ours_ratio, paper, note) in enumerate(rows):
            paper_cell = "–" if paper is None else f"{paper:g}"
            paper_ratio = "" if method.startswith("plaintext") else ratio(paper, paper_base)
            table.add_row(label if i == 0 else "", method, ours, ours_ratio, paper_cell, paper_ratio, note)
        table.add_section()
    console.print(table)
    for result in results:
        setting, he = result["setting"], result["he"]
        console.print(
            f"{setting.name}: one d×d inverse per round (the paper's cost model, spec App. C.1; not in our timings, "
            f"which are given A^-1) would add {result['inverse']:.4f} s over N = {setting.n_rounds} rounds."
        )
        if he.profile is not None:
            arms, profile = he.measured_arms, he.profile
            phases = ", ".join(f"{k} {v / arms:.2f}" for k, v in profile.seconds.items())
            console.print(
                f"{setting.name} HE per arm: {phases} s; {profile.encryptions / arms:.0f} encryptions, "
                f"{profile.decryptions / arms:.0f} decryptions, {profile.products / arms:.0f} ct×pt products."
            )
    sigma = gaussian_sigma(args.epsilon, args.delta)
    cpu = next((line.split(":", 1)[1].strip() for line in _cpuinfo() if line.startswith("model name")), "unknown CPU")
    console.print(
        f"DP: (ε, δ) = ({args.epsilon}, {args.delta}) per released block, sensitivity 2, σ = {sigma:.2f}. "
        f"HE: {args.key_bits}-bit Paillier, gmpy2 {'used' if phe.util.HAVE_GMP else 'not installed'}, "
        f"key generation {key_seconds:.2f} s (not timed in the table).\n"
        f"Machine: {cpu}, {os.cpu_count()} cores ({len(os.sched_getaffinity(0))} usable), 1 BLAS thread, "
        f"load average {os.getloadavg()[0]:.1f}, Python {platform.python_version()}, numpy {np.__version__}. "
        f"Times are the fastest of {args.repeat} runs (HE: one run; MPC: {min(args.repeat, 3)}, the dealer's "
        "offline work included, setup not)."
    )


def _cpuinfo() -> list[str]:
    try:
        with open("/proc/cpuinfo") as file:
            return file.read().splitlines()
    except OSError:
        return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--he-arms", type=int, default=1, help="HE arms measured at the small setting (default 1)")
    parser.add_argument("--full", action="store_true", help="run HE on all K·N arms of the small setting")
    parser.add_argument("--he-large-arms", type=int, default=0, help="HE arms measured at the large setting (0: skip)")
    parser.add_argument("--key-bits", type=int, default=2048, help="Paillier modulus size (default 2048)")
    parser.add_argument("--epsilon", type=float, default=0.5, help="DP ε per released block, in (0, 1)")
    parser.add_argument("--delta", type=float, default=1e-5, help="DP δ per released block")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of O3M, DP and plaintext (fastest kept)")
    parser.add_argument("--settings", nargs="+", choices=[s.name for s in SETTINGS], default=[s.name for s in SETTINGS])
    parser.add_argument("--seed", type=int, default=0)
    args = parse_args(parser, key_bits=512, repeat=1, settings=["small"])
    if args.he_arms < 0 or args.he_large_arms < 0 or args.repeat < 1:
        parser.error("--he-arms and --he-large-arms must be >= 0 and --repeat >= 1")
    gaussian_sigma(args.epsilon, args.delta)  # validate before any work
    console = Console(width=220)
    start = time.perf_counter()
    key_holder = KeyHolder(args.key_bits)
    key_seconds = time.perf_counter() - start
    with threadpool_limits(limits=1):
        results = [run_setting(s, args, key_holder, console) for s in SETTINGS if s.name in args.settings]
    report(results, args, key_seconds, console)


if __name__ == "__main__":
    main()
