"""Batched disjoint LinUCB for P2B populations versus a per-user loop of ``LinUCB``.

P2B (spec ``p2b.md`` §2.7, §9 item 22) simulates up to ~1.4 million users, each
running its own disjoint LinUCB (α = 1, λ = 1) for t rounds. This script times

* ``run_population`` (``privbandits.linear.population``): compiled kernels over
  blocks of users, in parallel on numba's threads, and
* the plain alternative: one ``LinUCB(K, d, layout="disjoint")`` per user,
  ``select`` / ``update`` in a Python loop (BLAS limited to one thread); a
  warm user copies the statistics of one template set to the server model,

on the same pre-drawn rounds (simplex contexts, Bernoulli rewards), cold and
warm-started from a server model fitted on shared tuples, for

* dense contexts: d = 10, K = 10, t = 10 (the paper's Fig. 4 setting);
* one-hot codes: k = 1024, K = 10, t = 10 (the private agents, §9 item 1);
  the loop runs ``LinUCB`` on the explicit one-hot vectors (1024 × 1024
  matrices per arm, hence its huge ratio).

Both paths must choose the same arms on the users they share. The speed unit is
user-rounds per second, the fastest of ``--repeat`` runs (the 2-core machine is
shared, so single runs vary by up to 2x); the ratio is batched over loop. A
first step runs a 10^6-user population in a child process and reports its peak
resident memory (``resource.getrusage``), with the inputs and log it had to hold.

Run ``python benchmarks/batched_agents.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable

import numba
import numpy as np
from _smoke import parse_args
from threadpoolctl import threadpool_limits

from privbandits.linear import LinUCB
from privbandits.linear.population import CodeModel, DisjointModel, run_population

N_ARMS, N_ROUNDS, DIM, N_CODES = 10, 10, 10, 1024
SHARED_TUPLES = 5000


def population(
    kind: str, n_users: int, seed: int, warm: bool = True
) -> tuple[DisjointModel | CodeModel, np.ndarray, np.ndarray]:
    """A server model (cold or warm) and a population's contexts (float32 or int16 codes) and int8 reward table.

    Drawn in blocks of users, so that no float temporary of the whole population is ever held.
    """
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.0, 0.1, N_ARMS).astype(np.float32)
    arms, shared = rng.integers(0, N_ARMS, SHARED_TUPLES), rng.integers(0, 2, SHARED_TUPLES)
    if kind == "dense":
        server = rng.random((SHARED_TUPLES, DIM))
        model = DisjointModel.fit(server / server.sum(axis=1, keepdims=True), arms, shared, N_ARMS)
        model = model if warm else DisjointModel.cold(N_ARMS, DIM)
        contexts = np.empty((n_users, N_ROUNDS, DIM), dtype=np.float32)
    else:
        model = CodeModel.fit(rng.integers(0, N_CODES, SHARED_TUPLES), arms, shared, N_ARMS, N_CODES)
        model = model if warm else CodeModel.cold(N_ARMS, N_CODES)
        contexts = np.empty((n_users, N_ROUNDS), dtype=np.int16)
    rewards = np.empty((n_users, N_ROUNDS, N_ARMS), dtype=np.int8)
    for start in range(0, n_users, 100_000):
        users = slice(start, min(n_users, start + 100_000))
        n = users.stop - start
        rewards[users] = rng.random((n, N_ROUNDS, N_ARMS), dtype=np.float32) < rates
        if kind == "dense":
            x = rng.random((n, N_ROUNDS, DIM), dtype=np.float32)
            contexts[users] = x / x.sum(axis=2, keepdims=True)
        else:
            contexts[users] = rng.integers(0, N_CODES, (n, N_ROUNDS))
    return model, contexts, rewards


def per_user_loop(
    model: DisjointModel | CodeModel, warm: bool, contexts: np.ndarray, rewards: np.ndarray
) -> np.ndarray:
    """Every user's arms from its own ``LinUCB(layout="disjoint")``, one round at a time.

    A warm user copies the statistics of one template LinUCB set to the model
    and refreshed once (exact inverse), rather than inverting per user.
    """
    if isinstance(model, DisjointModel):
        A, b, features = model.A, model.b, None
    else:
        A = np.eye(N_CODES) + model.counts[:, :, None] * np.eye(N_CODES)
        b, features = model.reward_sums, np.eye(N_CODES)
    dim = A.shape[1]
    template = LinUCB(N_ARMS, dim, alpha=1.0, layout="disjoint")
    template.stats.A[:] = A
    template.stats.b[:] = b
    for arm in range(N_ARMS):
        template.stats.refresh(arm)
    arms = np.empty(rewards.shape[:2], dtype=np.int64)
    for u in range(len(contexts)):
        policy = LinUCB(N_ARMS, dim, alpha=1.0, layout="disjoint", tie_break="lowest")
        if warm:
            for name in ("A", "A_inv", "b", "theta"):
                getattr(policy.stats, name)[:] = getattr(template.stats, name)
        for t in range(N_ROUNDS):
            x = contexts[u, t].astype(np.float64) if features is None else features[contexts[u, t]]
            arms[u, t] = policy.select(x)
            policy.update(x, int(arms[u, t]), float(rewards[u, t, arms[u, t]]))
    return arms


def best_rate(n_user_rounds: int, repeat: int, work: Callable, *args: object) -> tuple[float, object]:
    """The fastest of ``repeat`` runs of ``work(*args)`` in user-rounds per second, and its result."""
    best = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        result = work(*args)
        best = max(best, n_user_rounds / (time.perf_counter() - start))
    return best, result


def compare(configs: list[tuple[str, bool]], users: dict, loop_users: dict, repeat: int, seed: int) -> None:
    """Time the per-user loops first, then the batched runs, and print one row per configuration.

    The loops run before any parallel kernel: once numba's OpenMP workers
    exist, this process's single-threaded Python runs about 1.5x slower on
    the 2-core machine, which would flatter the ratio.
    """
    populations = {(kind, warm): population(kind, users[kind], seed, warm) for kind, warm in configs}
    loops = {}
    with threadpool_limits(limits=1):
        for kind, warm in configs:
            model, contexts, rewards = populations[kind, warm]
            per_user_loop(model, warm, contexts[:1], rewards[:1])  # load LinUCB's kernels before timing
            n = loop_users[kind]
            loops[kind, warm] = best_rate(n * N_ROUNDS, repeat, per_user_loop, model, warm, contexts[:n], rewards[:n])
    for kind, warm in configs:
        model, contexts, rewards = populations[kind, warm]
        run_population(model, contexts[:8], rewards[:8])  # compile (or load the cache) before timing
        batched, log = best_rate(users[kind] * N_ROUNDS, repeat, run_population, model, contexts, rewards)
        loop, loop_arms = loops[kind, warm]
        same = int((loop_arms == log.arms[: loop_users[kind]]).sum())
        start_kind = "warm" if warm else "cold"
        print(
            f"{kind:6} {start_kind:5} {users[kind]:>9,} {batched:>14,.0f} {loop_users[kind]:>9,} {loop:>11,.0f} "
            f"{batched / loop:>9.1f}x   same arms {same}/{loop_arms.size}"
        )


def peak_memory(kind: str, n_users: int) -> None:
    """Child-process mode: run one population, print its peak RSS and input sizes as JSON."""
    model, contexts, rewards = population(kind, n_users, seed=1)
    run_population(model, contexts[:8], rewards[:8])  # load the compiled kernels before timing
    start = time.perf_counter()
    log = run_population(model, contexts, rewards)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    held = contexts.nbytes + rewards.nbytes + log.arms.nbytes + log.rewards.nbytes
    print(json.dumps({"peak": peak, "held": held, "seconds": seconds, "mean_reward": float(log.mean_reward.mean())}))


def main() -> None:
    global N_CODES  # a smoke run's one-hot loop works on 64 codes, not 1024 (1024 x 1024 matrices per arm)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller populations (about 30 s)")
    parser.add_argument("--memory-users", type=int, default=1_000_000, help="users of the peak-memory run (0 = skip)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per path; the fastest counts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peak-memory", choices=("dense", "codes"), help=argparse.SUPPRESS)
    args = parse_args(parser, memory_users=2_000, repeat=1)
    N_CODES = 64 if args.smoke else N_CODES
    if args.smoke:  # the same kernels on one thread: idle worker threads of a loaded machine only burn CPU
        numba.set_num_threads(1)
    if args.peak_memory:
        peak_memory(args.peak_memory, args.memory_users)
        return

    if args.memory_users:  # first, while this process is small: a child inherits its parent's peak RSS
        print(f"peak memory of run_population on {args.memory_users:,} users x t = {N_ROUNDS} (child process):")
        for kind in ("dense", "codes"):
            command = [sys.executable, __file__, "--peak-memory", kind, "--memory-users", str(args.memory_users)]
            command += ["--smoke"] if args.smoke else []
            result = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
            print(
                f"  {kind:6} peak RSS {result['peak'] / 2**20:5.0f} MiB "
                f"(inputs + log {result['held'] / 2**20:4.0f} MiB), {result['seconds']:5.1f} s, "
                f"{args.memory_users * N_ROUNDS / result['seconds']:,.0f} user-rounds/s"
            )
        print()

    users = {"dense": 300_000, "codes": 1_000_000}
    loop_users = {"dense": 1000, "codes": 4}
    if args.quick or args.smoke:
        users = {"dense": 2_000, "codes": 5_000} if args.smoke else {"dense": 50_000, "codes": 200_000}
        loop_users = {"dense": 20, "codes": 1} if args.smoke else {"dense": 200, "codes": 2}
    print(
        f"t = {N_ROUNDS}, K = {N_ARMS}, dense d = {DIM}, codes k = {N_CODES}, numba threads {numba.get_num_threads()}"
    )
    print(f"{'kind':6} {'start':5} {'users':>9} {'batched u·r/s':>14} {'loop usr':>9} {'loop u·r/s':>11} {'ratio':>10}")
    configs = [(kind, warm) for kind in ("dense", "codes") for warm in (False, True)]
    compare(configs, users, loop_users, args.repeat, args.seed)


if __name__ == "__main__":
    main()
