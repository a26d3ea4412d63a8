"""The ``--smoke`` flag of every benchmark: tiny sizes that run in seconds, so that a test can check each script still
runs (``tests/project/test_benchmarks.py``); a smoke run's numbers mean nothing and its targets are not judged.

Bad options are refused as the ``privbandits`` command refuses them: one line naming the option, the allowed
values and the value given, exit code 2, before any work (:func:`refuse`); so is a missing optional package of the
``bench`` extra (:func:`bench_extra`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any, NoReturn

from privbandits.validation import Constraint, Integer, InvalidInputError, check

HELP = "run tiny sizes in a few seconds, to check that the script works (the numbers mean nothing)"
NOTICE = "smoke run: tiny sizes, only to check that the script works; its numbers and targets mean nothing"
RUNS = ("repeat",)
"""Options that count runs of a measurement wherever a benchmark has them: at least 1."""


def refuse(message: str) -> NoReturn:
    """End the script with one line, ``error: MESSAGE``, and exit code 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def parse_args(
    parser: argparse.ArgumentParser, checks: dict[str, Constraint[Any]] | None = None, **smoke: object
) -> argparse.Namespace:
    """``parser``'s arguments plus ``--smoke``, which sets each of ``smoke``'s arguments to its value. Each argument
    given is checked first: ``checks`` maps a destination to its :class:`privbandits.validation.Constraint`, and
    every argument of :data:`RUNS` the parser has must be an integer >= 1."""
    parser.add_argument("--smoke", action="store_true", help=HELP)
    args = parser.parse_args()
    runs = {name: Integer(1, note="runs of each measurement") for name in RUNS if hasattr(args, name)}
    try:
        for name, constraint in {**runs, **(checks or {})}.items():
            check(getattr(args, name), f"--{name.replace('_', '-')}", constraint)
    except InvalidInputError as exc:
        refuse(str(exc))
    if args.smoke:
        print(NOTICE, file=sys.stderr)
        for name, value in smoke.items():
            setattr(args, name, value)
    return args


def integers(text: str) -> tuple[int, ...] | str:
    """An option's ``0,10,100`` as integers, for ``argparse``'s ``type=`` (anything else is left as given, for
    :func:`parse_args`' check to refuse naming the option)."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        return text


@contextlib.contextmanager
def bench_extra(script: str) -> Iterator[None]:
    """Around a script's imports of the optional ``bench`` extra: a missing package ends it with one line naming
    the package and how to install the extra (exit code 2), not a traceback."""
    try:
        yield
    except ModuleNotFoundError as exc:
        refuse(f"{script} needs the optional bench extra: {exc} (install it with make bench, or pip install -e "
               "'.[bench]')")  # fmt: skip
