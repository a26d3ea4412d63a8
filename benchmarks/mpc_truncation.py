"""Mean rounding error of every truncation mode of the MPC engine, in units in the last place (issue 29).

For each mode (local, ``wraps`` and ``exact`` truncation; 2, 3 or 5 parties) and each operation that
truncates (:data:`~privbandits.mpc.rounding.OPERATIONS`), ``--count`` results of random reals in [−1, 1)
and as many of 0·x are opened and compared with the exact quotient (:func:`~privbandits.mpc.rounding.
product_errors`). Printed: the mean error of each, the fraction of 0·x that is exactly 0, and the wrap
failures left out of the means (|error| > 1,000 ulp; probability about |x|/2^64 each).

Run ``python benchmarks/mpc_truncation.py [--count 100000]`` (about 10 s).
"""

from __future__ import annotations

import argparse

import numpy as np
from _smoke import parse_args
from rich.console import Console
from rich.table import Table

from privbandits.mpc.rounding import OPERATIONS, product_errors

MODES = ((2, "local"), (2, "wraps"), (3, "wraps"), (5, "wraps"), (2, "exact"), (3, "exact"))
FAILURE = 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000, help="results per mode, operation and kind")
    args = parse_args(parser, count=500)
    table = Table(title=f"Truncation error in ulp, mean of {args.count:,} results (L = 20)")
    for column in ("parties", "mode", "operation", "x·y", "0·x", "0·x exactly 0", "wrap failures"):
        table.add_column(column, justify="right")
    for parties, mode in MODES:
        for operation in OPERATIONS:
            errors = product_errors(parties, mode, operation, args.count, seed=1)
            zeros = product_errors(parties, mode, operation, args.count, zero=True, seed=2)
            kept = [e[np.abs(e) <= FAILURE] for e in (errors, zeros)]
            failures = sum(len(e) - len(k) for e, k in zip((errors, zeros), kept, strict=True))
            table.add_row(str(parties), mode, operation, f"{kept[0].mean():+.4f}", f"{kept[1].mean():+.4f}",
                          f"{np.mean(zeros == 0):.4f}", str(failures))  # fmt: skip
    Console().print(table)


if __name__ == "__main__":
    main()
