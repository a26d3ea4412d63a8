#!/usr/bin/env bash
# Issue 34's measurements that need more cores than a 2-core machine has, in one run:
#   1. the P2B service (shuffler, its workers, server) given 1, 2, 4 and 8 cores, the load generator on the others,
#      then every process sharing all cores (shuffler_throughput.py --service-cores);
#   2. FCLUB free-running against lock-step and the in-process run, every party a process on cores of its own
#      (fclub_free_running.py: rounds/s and CPU per round).
# Each benchmark's output goes to OUT/NAME.txt (OUT: the first argument, default many-cores).
#
#   PYTHON=.venv/bin/python benchmarks/many_cores.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-many-cores}
python=${PYTHON:-python3}
cores=$("$python" -c 'import os; print(len(os.sched_getaffinity(0)))')
if [ "$cores" -lt 12 ]; then
    echo "many_cores.sh needs at least 12 cores (8 for the service, 4 for the load generator); this process has $cores" >&2
    exit 2
fi
mkdir -p "$out"
export PYTHONUNBUFFERED=1
"$python" benchmarks/shuffler_throughput.py --no-baselines --workers all --service-cores 1,2,4,8 --devices 12000 \
    2>&1 | tee "$out/shuffler_throughput.txt"
"$python" benchmarks/fclub_free_running.py --skip-regret --rounds 16383 --cpu 2>&1 | tee "$out/fclub_free_running.txt"
