"""Rerun the FCLUB reference code on its own 40 users and compare it with the reference-compatible preset (issue 15).

The reference code (github.com/ZhaoHaoRu/Federated-Clustering-of-Bandits, not shipped by this project) needs
numpy < 1.24 (``np.int``, ``np.float_``) and networkx; give a Python that has them::

    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install numpy==1.23.5 networkx==3.1
    python benchmarks/fclub_reference_gap.py --reference /path/to/Federated-Clustering-of-Bandits \\
        --python /tmp/refvenv/bin/python

It runs each algorithm × seed of the reference code unchanged in its own process (``np.random.seed(s)``,
``random.seed(s)``; its per-round prints silenced), two at a time under ``nice``, prints the per-seed
numbers as the ``REFERENCE_CODE_RUNS`` literal of ``privbandits.papers.fclub.reference``, and
then (unless ``--no-ours``) runs ``privbandits run fclub-reference-gap`` on the same users, whose report
compares the two (medians, two-sided Mann–Whitney p, the ablation, communication both ways).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _smoke import parse_args

ALGORITHMS = {"FCLUB-DC": "fclub-dc", "CDP-FCLUB-DC": "cdp-fclub-dc", "Homo-DC": "homo-dc", "FCLUB": "fclub"}

DRIVER = r"""
import json, random, sys, time, warnings
import numpy as np

ref, algorithm, seed, horizon = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, ref + "/experiment")
warnings.filterwarnings("ignore")
import Environment as Envi, LDP_FCLUB_DC, CDP_FCLUB_DC, FCLUB, DC_homogenenous_version
for module in (LDP_FCLUB_DC, CDP_FCLUB_DC, FCLUB, DC_homogenenous_version):
    module.print = lambda *a, **k: None  # the reference prints beta every round
theta = np.load(ref + "/raw_data/synthetic_data/10_theta.npy")
n, L, d, K = len(theta), 5, theta.shape[1], 10
users = [n // L] * (L - 1) + [n - (n // L) * (L - 1)]
np.random.seed(seed)
random.seed(seed)
env = Envi.Environment(d=d, num_users=n, L=K, theta=theta)
start = time.time()
if algorithm == "fclub":
    server = FCLUB.Global_server(L, n, users, d=d, T=horizon)
    regret, _, _, _, _, comm = server.run(env, horizon, 0, user_num=n)
else:
    phase = (horizon + 2).bit_length() - 2  # horizon = 2^(phase+1) - 2 rounds
    all_round = 2 ** (phase + 1) - 1
    module = {"fclub-dc": LDP_FCLUB_DC, "cdp-fclub-dc": CDP_FCLUB_DC, "homo-dc": DC_homogenenous_version}[algorithm]
    server = module.Global_server(L, n, users, d=d, T=all_round)
    out = server.run(env, phase=phase, number=0, all_round=all_round)
    regret, comm = out[0], (out[3] if len(out) > 3 else [0])
print(json.dumps({"algorithm": algorithm, "seed": seed, "regret": float(np.sum(regret)),
                  "communication": int(comm[-1]), "seconds": time.time() - start}))
"""


def run_reference(python: str, reference: Path, algorithm: str, seed: int, horizon: int, driver: Path) -> dict:
    command = ["nice", "-n", "10", python, str(driver), str(reference), algorithm, str(seed), str(horizon)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the reference code failed ({' '.join(command)}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference", type=Path, help="checkout of the reference code (required but in --smoke)")
    parser.add_argument("--python", default=sys.executable, help="a Python with numpy < 1.24 and networkx")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--horizon", type=int, default=2**14 - 2, help="2^k - 2 rounds (DC variants: whole phases)")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS), help="comma-separated: " + ", ".join(ALGORITHMS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-ours", action="store_true", help="only run the reference code")
    args = parse_args(parser, seeds=1, horizon=254, jobs=1)
    if args.reference is None:
        if not args.smoke:
            parser.error("--reference is required: a checkout of the reference code")
        compile(DRIVER, "driver.py", "exec")  # without the reference code, a smoke run checks the driver's syntax
        ours(args)
        return
    if (args.horizon + 2) & (args.horizon + 1):
        parser.error("--horizon must be 2^k - 2 (the DC variants run whole phases)")
    names = [name.strip() for name in args.algorithms.split(",") if name.strip()]
    unknown = sorted(set(names) - set(ALGORITHMS))
    if unknown:
        parser.error(f"unknown algorithms {unknown}; known: {', '.join(ALGORITHMS)}")
    if not (args.reference / "raw_data/synthetic_data/10_theta.npy").is_file():
        parser.error(f"{args.reference} is not a checkout of the reference code (no 10_theta.npy in raw_data/)")
    with tempfile.TemporaryDirectory() as folder:
        driver = Path(folder) / "driver.py"
        driver.write_text(DRIVER)
        jobs = [(name, seed) for name in names for seed in range(args.seeds)]
        with ThreadPoolExecutor(args.jobs) as pool:

            def one(job: tuple[str, int]) -> dict:
                return run_reference(args.python, args.reference, ALGORITHMS[job[0]], job[1], args.horizon, driver)

            results = list(pool.map(one, jobs))
    for (name, seed), result in zip(jobs, results, strict=True):
        print(f"{name:13s} seed {seed}: regret {result['regret']:8.1f}  communication {result['communication']:6d}  "
              f"({result['seconds']:.0f} s)")  # fmt: skip
    regret = {name: [round(r["regret"], 1) for (n, _), r in zip(jobs, results, strict=True) if n == name]
              for name in names}  # fmt: skip
    comm = {name: [r["communication"] for (n, _), r in zip(jobs, results, strict=True) if n == name] for name in names}
    print("\nREFERENCE_CODE_RUNS =", json.dumps({"horizon": args.horizon, "regret": regret, "communication": comm},
                                                indent=4))  # fmt: skip
    if not args.no_ours:
        ours(args)


def ours(args: argparse.Namespace) -> None:
    """``privbandits run fclub-reference-gap`` on the reference's users (a smoke run: into a temporary folder, and
    without ``reference_dir`` when none was given, so the report says it skipped the comparison)."""
    command = ["privbandits", "run", "fclub-reference-gap", "-o", f"horizon={args.horizon}",
               "-o", f"seeds={args.seeds}", "--jobs", str(args.jobs)]  # fmt: skip
    command += ["-o", f"reference_dir={args.reference}"] if args.reference else []
    print("\n$", " ".join(command), flush=True)
    run = [sys.executable, "-m", "privbandits.cli", *command[1:]]
    if not args.smoke:
        subprocess.run(["nice", "-n", "10", *run], check=True)
        return
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([*run, "--store", f"{folder}/r.sqlite", "--out", folder, "--no-progress"], check=True)


if __name__ == "__main__":
    main()
