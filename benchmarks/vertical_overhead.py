"""Overhead of the vertical federated protocol (VFUCB) over centralized LinUCB.

For each (d, K) with M parties holding equal feature blocks, runs the same
contexts and rewards through

* centralized LinUCB (one process sees every feature), and
* the whole VFUCB protocol: mask generator, M − 1 passive parties masking their
  blocks, the active party aggregating and running LinUCB on masked contexts,
  every message through the in-memory network,

and prints per-step wall times and ratios measured in the same run: whole
protocol / central (all parties run one after another in this process), the
critical path / central (the active party plus the slowest passive party per
round, i.e. parties running in parallel as in a deployment), and the active
party's own compute (its protocol steps, message handling included) / central.
Targets (issue 3): whole ≤ 2.2 and active party ≤ 1.3. The third column group
("no messages") times the same arithmetic without the message layer: the floor
any message-passing implementation sits above. Times are the fastest of ``--repeats`` runs, 1 BLAS thread, and the
central and federated runs alternate so that machine drift hits both.

    python benchmarks/vertical_overhead.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from _smoke import parse_args
from threadpoolctl import threadpool_limits

from privbandits.linear import LinUCB
from privbandits.privacy.masks import draw_mask, split_columns
from privbandits.protocols.vertical.core import VerticalFederatedBandit

SETTINGS = ((100, 10, 3000), (500, 100, 300))  # (d, K, rounds)
TARGET_WHOLE, TARGET_ACTIVE = 2.2, 1.3


def unit_rows(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def run(policy, contexts: np.ndarray, rewards: np.ndarray) -> float:
    """Seconds per step (select + update) over all rounds."""
    start = time.perf_counter()
    for t in range(len(contexts)):
        policy.update(contexts[t], policy.select(contexts[t]), rewards[t])
    return (time.perf_counter() - start) / len(contexts)


def measure(dim: int, n_arms: int, rounds: int, n_parties: int, repeats: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    contexts = unit_rows(rng, (rounds, n_arms, dim))
    rewards = rng.standard_normal(rounds) * 0.2
    partition = [dim // n_parties] * n_parties
    mask = draw_mask(partition, rng=rng)
    run(LinUCB(n_arms, dim), contexts[:5], rewards[:5])  # compile the kernels outside the timings
    blocks = [np.ascontiguousarray(block.T) for block in split_columns(mask, partition)]
    times: dict[str, list[float]] = {"central": [], "whole": [], "critical": [], "active": [], "floor": []}
    for _ in range(repeats):
        times["central"].append(run(LinUCB(n_arms, dim, alpha=0.5), contexts, rewards))
        federated = VerticalFederatedBandit(partition, LinUCB(n_arms, dim, alpha=0.5), mask=mask)
        times["whole"].append(run(federated, contexts, rewards))
        times["critical"].append(federated.critical_path_seconds / rounds)
        times["active"].append(federated.compute_seconds[federated.active.name] / rounds)
        times["floor"].append(run_without_messages(LinUCB(n_arms, dim, alpha=0.5), blocks, contexts, rewards))
    return {name: min(values) for name, values in times.items()}


def run_without_messages(learner: LinUCB, blocks: list[np.ndarray], contexts: np.ndarray, rewards: np.ndarray) -> float:
    """The protocol's arithmetic alone: every party's masking, the sum, and LinUCB on it (no messages)."""
    width = blocks[0].shape[0]
    start = time.perf_counter()
    for t in range(len(contexts)):
        masked = np.ascontiguousarray(contexts[t][:, :width]).dot(blocks[0])
        offset = width
        for block in blocks[1:]:
            masked += np.ascontiguousarray(contexts[t][:, offset : offset + len(block)]).dot(block)
            offset += len(block)
        learner.update(masked, learner.select(masked), rewards[t])
    return (time.perf_counter() - start) / len(contexts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--parties", type=int, default=5)
    args = parse_args(parser, repeats=1)
    print(f"VFUCB overhead, M = {args.parties}, fastest of {args.repeats}, 1 BLAS thread, {os.cpu_count()} cores")
    header = (
        f"{'d':>5} {'K':>4} | {'central':>8} {'whole':>8} {'critical':>8} {'AP':>8} {'no msgs':>8} µs/step |"
        f" {'whole/c':>12} {'crit/c':>6} {'AP/c':>11} {'no msgs/c':>9}"
    )
    print(header)
    print("-" * len(header))
    with threadpool_limits(limits=1):
        for dim, n_arms, rounds in ((20, 4, 30),) if args.smoke else SETTINGS:
            t = measure(dim, n_arms, rounds, args.parties, args.repeats)
            ratio = {name: value / t["central"] for name, value in t.items()}
            whole_ok = "ok" if ratio["whole"] <= TARGET_WHOLE else "MISS"
            active_ok = "ok" if ratio["active"] <= TARGET_ACTIVE else "MISS"
            print(
                f"{dim:>5} {n_arms:>4} | "
                + " ".join(f"{t[name] * 1e6:>8.1f}" for name in ("central", "whole", "critical", "active", "floor"))
                + f"         | {ratio['whole']:>7.2f} {whole_ok:>4}"
                f" {ratio['critical']:>6.2f} {ratio['active']:>6.2f} {active_ok:>4}"
                f" {ratio['floor']:>9.2f}"
            )
    print(f"targets: whole/central <= {TARGET_WHOLE}, AP/central <= {TARGET_ACTIVE}")


if __name__ == "__main__":
    main()
