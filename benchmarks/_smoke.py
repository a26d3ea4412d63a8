"""The ``--smoke`` flag of every benchmark: tiny sizes that run in seconds, so that a test can check each script still
runs (``tests/test_benchmarks.py``); a smoke run's numbers mean nothing and its targets are not judged."""

from __future__ import annotations

import argparse
import sys

HELP = "run tiny sizes in a few seconds, to check that the script works (the numbers mean nothing)"
NOTICE = "smoke run: tiny sizes, only to check that the script works; its numbers and targets mean nothing"


def parse_args(parser: argparse.ArgumentParser, **smoke: object) -> argparse.Namespace:
    """``parser``'s arguments plus ``--smoke``, which sets each of ``smoke``'s arguments to its value."""
    parser.add_argument("--smoke", action="store_true", help=HELP)
    args = parser.parse_args()
    if args.smoke:
        print(NOTICE, file=sys.stderr)
        for name, value in smoke.items():
            setattr(args, name, value)
    return args
