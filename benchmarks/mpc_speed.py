"""Per-round time of the private ε-greedy learner (MPC paper Alg. 1) against its plaintext twin.

Both learners play the same random unit contexts and 0/1 rewards in the same
process (2 parties, |A| = 10, D = 20 by default, as in the paper's "nearly 500x"
remark); measurements alternate between them ``--repeat`` times and the median
ratio is reported, so load from other processes hits both alike. The private
round's communication rounds, messages and payload bytes come from the message
layer's traffic ledger, and are printed beside the paper's Table 1. Offline
dealer material is generated inside the timed rounds; the paper timed only the
online phase (spec A17), so the dealer's time is also measured and the online
ratio (without it) is printed beside the total.

Run ``python benchmarks/mpc_speed.py [--arms 10] [--parties 2] [--rounds 100] [--repeat 15]``: 15 short
alternations, as single ratios on a shared virtual machine spread over ±20%.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from _smoke import parse_args
from rich.console import Console
from rich.table import Table

from privbandits.papers.mpc.costs import round_costs
from privbandits.papers.mpc.reference import PAPER_LEARNER_SLOWDOWN, PAPER_TABLE1
from privbandits.protocols.mpc_bandit import MPCBanditConfig

TARGET = 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", type=int, default=10)
    parser.add_argument("--parties", type=int, default=2)
    parser.add_argument("--dim", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=100, help="private rounds per measurement")
    parser.add_argument("--twin-rounds", type=int, default=2000, help="plaintext rounds per measurement")
    parser.add_argument("--repeat", type=int, default=15, help="alternations (short ones resist a noisy machine)")
    args = parse_args(parser, rounds=3, twin_rounds=20, repeat=1)
    partition = tuple(len(block) for block in np.array_split(np.arange(args.dim), args.parties))
    config = MPCBanditConfig(n_arms=args.arms, partition=partition)
    results = [round_costs(config, args.rounds, args.twin_rounds, seed) for seed in range(args.repeat)]
    ratio = statistics.median(r["ratio"] for r in results)
    online_ratio = statistics.median(r["online_ratio"] for r in results)
    private_ms = statistics.median(r["private_ms"] for r in results)
    online_ms = statistics.median(r["online_ms"] for r in results)
    plain_ms = statistics.median(r["plain_ms"] for r in results)
    last = results[-1]

    console = Console()
    table = Table(title=f"Private learner round: |P| = {args.parties}, |A| = {args.arms}, D = {args.dim}")
    for column in ("private ms (online)", "twin ms", "slow-down (online)", "target", "paper", "comm. rounds",
                   "messages", "bytes (all links)"):  # fmt: skip
        table.add_column(column, justify="right")
    table.add_row(
        f"{private_ms:.2f} ({online_ms:.2f})",
        f"{plain_ms:.4f}",
        f"{ratio:.0f}x ({online_ratio:.0f}x)",
        f"≤ {TARGET}x: {'met' if ratio <= TARGET else 'missed'} ({'met' if online_ratio <= TARGET else 'missed'})",
        f"~{PAPER_LEARNER_SLOWDOWN}x",
        f"{last['rounds']:.0f}",
        f"{last['messages']:.0f}",
        f"{last['bytes']:,.0f}",
    )
    console.print(table)
    console.print(
        "slow-down per repeat, total (online): "
        + ", ".join(f"{r['ratio']:.0f}x ({r['online_ratio']:.0f}x)" for r in results)
    )
    console.print(
        "online = without the dealer's time: the paper timed only the online phase (spec A17); this engine draws "
        "its offline material on demand inside the round."
    )
    paper = Table(title="Paper, Table 1 (|P| = 2, |A| = 100; CrypTen vs PyTorch) — see `privbandits run mpc-table1`")
    for column in ("operation", "rounds", "slow-down"):
        paper.add_column(column, justify="right")
    for name, (rounds, slowdown) in PAPER_TABLE1.items():
        paper.add_row(name, str(rounds), f"{slowdown:,}x")
    console.print(paper)


if __name__ == "__main__":
    main()
