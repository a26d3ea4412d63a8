"""What FCLUB's per-round input checks cost (issue 14: at most 5% per round).

``select``/``update`` as shipped against the same bodies with every input check removed,
alternated in one process on :mod:`fclub_speed`'s setting (the paper's default: 40 users,
5 local servers, d = 10, K = 10). CPU time per round (``time.process_time``, so load on a
shared machine counts less than in wall time); median and best of ``--repeat`` alternations.
The check-free ``update`` is the shipped method's source without its first check (asserted
present, so a changed method fails here rather than measuring something else).

    .venv/bin/python benchmarks/fclub_check_cost.py [--repeat 15] [--rounds 65534]
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import textwrap
import time
import warnings

import fclub_speed
from _smoke import parse_args
from threadpoolctl import threadpool_limits

from privbandits.protocols import fclub
from privbandits.protocols.fclub import baselines as fclub_baselines

FCLUB, BASELINE = fclub.FederatedClusteredBandit, fclub_baselines.LocalBaselineBandit
NAMES = ("per-user LinUCB (FCLUB baseline)", "CDP-FCLUB-DC", "FCLUB-DC")
UPDATE_CHECK = (
    "        if self._contexts is None or not (isinstance(reward, float) and isfinite(reward)):\n"
    "            reward = self._check_update(reward)\n"
)


def fclub_select(self, user, contexts):
    t = self.t + 1
    if t == self._next_phase_start:
        self.t, self.phase = t, self.phase + 1
        self.phase_starts.append(t)
        self._next_phase_start = 2 ** (self.phase + 1) - 1
        self._detect(t)
    elif self.config.detect_every_round:
        self.t = t
        self._detect(t)
    server, i = self._route[user]
    self._arm = arm = server.recommend(i, contexts)
    self.t, self._user, self._contexts = t, user, contexts
    return arm


def _fclub_update():
    source = textwrap.dedent(inspect.getsource(FCLUB.update))
    header, _, body = source.partition('"""')[2].partition('"""')
    body = textwrap.indent(textwrap.dedent(body), "    ")
    check = textwrap.indent(textwrap.dedent(UPDATE_CHECK), "    ")
    if check not in body:
        raise SystemExit("FederatedClusteredBandit.update no longer starts with the check this script removes")
    namespace: dict = {}
    exec("def update(self, reward):\n" + body.replace(check, ""), dict(vars(sys.modules[FCLUB.__module__])), namespace)
    return namespace["update"]


def baseline_select(self, user, contexts):
    if self._shape is None:
        self._shape = (len(contexts), self.servers[0][1].dim)
    server, i = self._route[user]
    self._arm = arm = server.recommend(i, contexts)
    self.t += 1
    self._user, self._contexts = user, contexts
    return arm


def baseline_update(self, reward):
    server, i = self._route[self._user]
    x, self._contexts = self._contexts[self._arm], None
    server.observe(i, x, reward, self.t)
    self.communication.rounds += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="alternations (default 15)")
    parser.add_argument("--rounds", type=int, default=2**16 - 2, help="rounds per run (default 65,534)")
    args = parse_args(parser, repeat=1, rounds=254)
    shipped = {FCLUB: (FCLUB.select, FCLUB.update), BASELINE: (BASELINE.select, BASELINE.update)}
    bare = {FCLUB: (fclub_select, _fclub_update()), BASELINE: (baseline_select, baseline_update)}
    warnings.filterwarnings("ignore", message="FCLUB: privatizer noise exceeded")
    runs = fclub_speed.learners(args.rounds)
    times = {(name, mode): [] for name in NAMES for mode in ("checked", "bare")}
    with threadpool_limits(limits=1):
        for run in fclub_speed.learners(254).values():  # compile and load every kernel first
            run(0)
        for repeat in range(args.repeat):
            for mode, methods in (("checked", shipped), ("bare", bare)):
                for cls, (select, update) in methods.items():
                    cls.select, cls.update = select, update
                for name in NAMES:
                    start = time.process_time()
                    runs[name](repeat)
                    times[(name, mode)].append((time.process_time() - start) / args.rounds * 1e6)
    for cls, (select, update) in shipped.items():
        cls.select, cls.update = select, update
    print(f"CPU µs per round, {args.rounds} rounds, {args.repeat} alternations; ratio = checked / without checks")
    for name in NAMES:
        checked, free = times[(name, "checked")], times[(name, "bare")]
        print(
            f"  {name:34s} checked {statistics.median(checked):6.2f} (best {min(checked):6.2f})  "
            f"without {statistics.median(free):6.2f} (best {min(free):6.2f})  "
            f"ratio median {statistics.median(checked) / statistics.median(free):.3f}, "
            f"best {min(checked) / min(free):.3f}  (target <= 1.05)"
        )


if __name__ == "__main__":
    main()
