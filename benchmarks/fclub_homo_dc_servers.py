"""The reference code's Homo-DC beside ours, both instrumented per server (issue 29).

Per seed: final regret, each server's synchronized sample count at the end (a server that stops at 8-9 has a
singular S whose determinant came out non-positive, so Eq. 5 never fires again), uploads, and for the reference
the samples its phase starts dropped from pending buffers. The reference code runs unchanged; its
``check_upload`` and ``detection`` are wrapped to count (a Python with numpy < 1.24 and networkx, as for
``fclub_reference_gap.py``)::

    python benchmarks/fclub_homo_dc_servers.py --reference /path/to/Federated-Clustering-of-Bandits \\
        --python /tmp/refvenv/bin/python --seeds 10

``-o NAME=false`` (repeatable) switches an option of our preset off, e.g. ``-o carry_synchronized_copies=false``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _smoke import parse_args
from threadpoolctl import threadpool_limits

from privbandits.papers.fclub.runs import Setting, run_algorithm

HORIZON = 2**14 - 2

DRIVER = r"""
import json, random, sys, warnings
import numpy as np
ref, seed, horizon = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, ref + "/experiment")
warnings.filterwarnings("ignore")
import Environment as Envi, DC_homogenenous_version as H
H.print = lambda *a, **k: None
theta = np.load(ref + "/raw_data/synthetic_data/10_theta.npy")
n, L, d, K = len(theta), 5, theta.shape[1], 10
np.random.seed(seed); random.seed(seed)
env = Envi.Environment(d=d, num_users=n, L=K, theta=theta)
seen = {"uploads": 0, "dropped": 0}
upload, detection = H.Global_server.check_upload, H.Global_server.detection
def check_upload(self, server, cluster):
    buffered = self.l_server_list[int(server)].clusters[cluster].T_up
    upload(self, server, cluster)
    seen["uploads"] += buffered > 0 and self.l_server_list[int(server)].clusters[cluster].T_up == 0
def detect(self, t):
    seen["dropped"] += sum(c.T_up for s in self.l_server_list for c in s.clusters.values())
    detection(self, t)
H.Global_server.check_upload, H.Global_server.detection = check_upload, detect
phase = (horizon + 2).bit_length() - 2
server = H.Global_server(L, n, [n // L] * L, d=d, T=2 ** (phase + 1) - 1)
regret = server.run(env, phase=phase, number=0, all_round=2 ** (phase + 1) - 1)[0]
print(json.dumps({"regret": float(np.sum(regret)), "counts": [s.clusters[0].t for s in server.l_server_list],
                  **{k: int(v) for k, v in seen.items()}}))
"""


def reference(python: str, checkout: Path, seed: int, driver: Path) -> dict:
    command = ["nice", "-n", "10", python, str(driver), str(checkout), str(seed), str(HORIZON)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the reference code failed ({' '.join(command)}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ours(checkout: Path, seed: int, overrides: dict) -> dict:
    where = Setting(kind="reference-synthetic", data=checkout / "raw_data/synthetic_data/10_theta.npy")
    with threadpool_limits(limits=1):
        outcome, _ = run_algorithm("Homo-DC", where, HORIZON, seed, overrides)
    clusters = [c for server in outcome.bandit.servers for c in server.clusters.values()]
    return {"regret": float(outcome.regret[-1]), "counts": [c.T for c in clusters],
            "uploads": outcome.bandit.communication.uploads}  # fmt: skip


def _line(who: str, seed: int, run: dict) -> str:
    stuck = sum(count < 10 for count in run["counts"])
    dropped = f", dropped {run['dropped']:,}" if "dropped" in run else ""
    return (f"{who:9s} seed {seed}: regret {run['regret']:7.1f}  servers' counts {run['counts']}  stuck {stuck}  "
            f"uploads {run['uploads']:,}{dropped}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference", type=Path, help="checkout of the reference code (required but in --smoke)")
    parser.add_argument("--python", default=sys.executable, help="a Python with numpy < 1.24 and networkx")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("-o", dest="off", action="append", default=[], metavar="NAME=false",
                        help="switch an option of our preset off")  # fmt: skip
    args = parse_args(parser, seeds=1)
    if args.reference is None:
        if not args.smoke:
            parser.error("--reference is required: a checkout of the reference code")
        compile(DRIVER, "driver.py", "exec")  # without the reference code (and its data), check the driver's syntax
        return
    overrides = {}
    for item in args.off:
        name, _, value = item.partition("=")
        if value != "false":
            parser.error(f"-o takes NAME=false, got {item!r}")
        overrides[name] = False
    runs = {"reference": [], "ours": []}
    with tempfile.TemporaryDirectory() as folder:
        driver = Path(folder) / "driver.py"
        driver.write_text(DRIVER)
        for seed in range(args.seeds):
            runs["reference"].append(reference(args.python, args.reference, seed, driver))
            runs["ours"].append(ours(args.reference, seed, overrides))
            for who in runs:
                print(_line(who, seed, runs[who][-1]), flush=True)
    for who, done in runs.items():
        stuck = sum(count < 10 for run in done for count in run["counts"])
        per_server = sum(run["uploads"] for run in done) / max(1, sum(count >= 10 for run in done for count in
                                                                       run["counts"]))  # fmt: skip
        print(f"{who}: median regret {np.median([r['regret'] for r in done]):,.0f}; {stuck} of "
              f"{sum(len(r['counts']) for r in done)} servers stuck; {per_server:,.0f} uploads per server that "
              "does not stick")  # fmt: skip


if __name__ == "__main__":
    main()
