"""How long a P2B device agent's decide takes in-process (issue 46's target: at most 1 ms).

A :class:`~privbandits.deploy.p2b.agent.DeviceAgent` of the shipped P2B deployment (d = 5, |A| = 5, k = 32, one-hot
codes) decides for random contexts on the simplex and absorbs a 0/1 reward after each decision, as an application
embedding it would; every decision is committed to the agent's SQLite store before decide returns (WAL,
synchronous=NORMAL), every reward with synchronous=FULL. Cold (no server: nothing is fetched, no report is sent). The
first ``--warmup`` decisions (compiled kernels loading) are not timed. Prints decide's median, p99 and mean in
microseconds and the reward's median, with the load average (the machine may be shared).

    .venv/bin/python benchmarks/p2b_agent_decide.py              # 2,000 decisions, a few seconds
    .venv/bin/python benchmarks/p2b_agent_decide.py --smoke      # seconds
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _smoke import parse_args  # noqa: E402

TARGET_US = 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decisions", type=int, default=2000, help="timed decisions (default 2000)")
    parser.add_argument("--warmup", type=int, default=50, help="untimed decisions first (default 50)")
    parser.add_argument("--rounds-per-device", type=int, default=100, help="decisions per device before the next "
                        "device is created (its store grows; default 100)")  # fmt: skip
    args = parse_args(parser, decisions=100, warmup=10)
    from privbandits.deploy.deployment import load_deployment
    from privbandits.deploy.p2b.agent import DeviceAgent
    from privbandits.deploy.shipped import shipped_deployments

    folder = Path(tempfile.mkdtemp(prefix="p2b-agent-"))
    try:
        deployment_file = folder / "p2b.toml"
        shutil.copy(shipped_deployments()["p2b"], deployment_file)
        spec = load_deployment(deployment_file)
        host, dim = spec.names("device_host")[0], spec.protocol.dim
        rng = np.random.default_rng(0)
        decide_ns, reward_ns = [], []
        agent = None
        for i in range(args.warmup + args.decisions):
            if i % args.rounds_per_device == 0:
                if agent is not None:
                    agent.close()
                agent = DeviceAgent(spec, host, i // args.rounds_per_device, folder / "devices.sqlite",
                                    fetch_model=False, auto_report=False)  # fmt: skip
            assert agent is not None
            context = rng.random(dim)
            context /= context.sum()
            start = time.perf_counter_ns()
            decision = agent.decide(context)
            middle = time.perf_counter_ns()
            agent.reward(decision.event_id, int(rng.random() < 0.3))
            end = time.perf_counter_ns()
            if i >= args.warmup:
                decide_ns.append(middle - start)
                reward_ns.append(end - middle)
        if agent is not None:
            agent.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    decide_us, reward_us = np.array(decide_ns) / 1e3, np.array(reward_ns) / 1e3
    median = float(np.median(decide_us))
    print(f"p2b device agent decide, {len(decide_us)} decisions (shipped deployment, cold, in-process):")
    print(f"  decide: median {median:.0f} us, p99 {np.percentile(decide_us, 99):.0f} us, mean {decide_us.mean():.0f} us"
          f" (target <= {TARGET_US:.0f} us: {'met' if median <= TARGET_US else 'MISSED'})")  # fmt: skip
    print(f"  reward (fsync'd): median {np.median(reward_us):.0f} us")
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
