"""Overhead of the Ray executor against the local process pool on one sweep.

Runs the same sweep (default: ``vertical-fig4`` at 1,500 rounds and 3 seeds, 18 units)
into two fresh stores, once with ``--executor local`` and once with ``--executor ray``,
both with the same number of workers, and prints the wall time of each, their ratio,
and whether the stored results are identical (measured wall times excepted). Ray
is the optional extra (``make ray``); without it the script says so and exits 0.

    python benchmarks/ray_overhead.py [--name vertical-fig4] [--jobs 2] [-o horizon=1500] [-o seeds=0,1,2]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _smoke import parse_args

TIMING_KEYS = {"wall_time_s"}


def _rows(store: Path) -> list[tuple[str, dict]]:
    from privbandits.experiments.store import ResultsStore

    with ResultsStore(store) as results:
        units = results.units(sorted(results.stored_keys()))
    return [(key, {k: v for k, v in unit.result.items() if k not in TIMING_KEYS}) for key, unit in units.items()]


def _sweep(name: str, options: list[str], jobs: int, executor: str, folder: Path) -> tuple[float, Path]:
    store = folder / f"{executor}.sqlite"
    command = [sys.executable, "-m", "privbandits.cli", "run", name, "--store", str(store), "--out", str(folder)]
    command += ["--jobs", str(jobs), "--executor", executor, "--no-progress", "--no-report"]
    for option in options:
        command += ["-o", option]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="vertical-fig4")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("-o", "--option", action="append", default=None)
    args = parse_args(parser, name="vertical-synthetic-demo", option=["horizon=30", "seeds=0"], jobs=1)
    options = args.option if args.option is not None else ["horizon=1500", "seeds=0,1,2"]
    if importlib.util.find_spec("ray") is None:
        if args.smoke:  # the local half still checks the sweep's command line
            with tempfile.TemporaryDirectory() as tmp:
                seconds, store = _sweep(args.name, options, args.jobs, "local", Path(tmp))
                print(f"Ray is not installed: local process pool only, {len(_rows(store))} units in {seconds:.1f} s")
            return 0
        print("Ray is not installed (optional extra): run `make ray` first; nothing measured.")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        local, local_store = _sweep(args.name, options, args.jobs, "local", folder)
        ray, ray_store = _sweep(args.name, options, args.jobs, "ray", folder)
        same = _rows(local_store) == _rows(ray_store)
        units = len(_rows(local_store))
    print(f"{args.name} {' '.join(options)}: {units} units, {args.jobs} workers")
    print(f"  local process pool: {local:6.1f} s (whole command, reference)")
    print(f"  Ray (local cluster): {ray:6.1f} s  ratio {ray / local:.2f}x  (+{ray - local:.1f} s)")
    print(f"  stored results identical (wall times excepted): {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
