"""The timing units of Fig. 4, Fig. 5 and Table 1, and :func:`round_costs` (also used by ``benchmarks/``).

A timing unit's result is its measurement: stored like any other unit, so the
report rebuilds without re-timing. Times from different sessions and loads do not
compare, so one unit times every setting of a figure, one after the other in one
process; its communication rounds and bytes are exact, the times are not
reproducible.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from privbandits.comm import ROUND
from privbandits.experiments.later_options import mpc_store_params
from privbandits.experiments.tasks import Task
from privbandits.mpc import Engine
from privbandits.mpc.dealer import AnyDealer, Dealer
from privbandits.protocols.mpc_bandit import MPCBanditConfig, PlaintextEpsilonGreedy, PrivateEpsilonGreedy

_MODULE = "privbandits.papers.mpc.costs"
OPERATIONS = ("add", "mul", "reciprocal", "argmax")
"""The secure operations of Table 1, in its order."""


def _clock_dealer(dealer: AnyDealer) -> list[float]:
    """Wrap ``dealer``'s public methods (on this instance) to add their wall time to the returned
    one-element list: the offline work that the engine does on demand inside the round."""
    spent = [0.0]

    def clocked(method: Callable) -> Callable:
        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start

        return run

    for name in dir(Dealer):
        if not name.startswith("_") and callable(getattr(Dealer, name)):
            setattr(dealer, name, clocked(getattr(dealer, name)))
    return spent


def round_costs(config: MPCBanditConfig, rounds: int = 20, twin_rounds: int = 2000, seed: int = 0) -> dict:
    """Per-round wall time of the private learner and the twin on random unit contexts, with the
    private round's communication rounds and payload bytes (all links) from the traffic ledger.

    ``online_ms`` leaves out the dealer's time: the paper timed only the online phase (spec A17),
    while this engine draws its offline material on demand inside the round."""
    rng = np.random.default_rng(seed)
    contexts = rng.normal(size=(max(rounds, twin_rounds) + 2, config.dim))
    contexts /= np.linalg.norm(contexts, axis=1, keepdims=True)
    rewards = rng.integers(0, 2, size=(len(contexts), config.n_arms)).astype(float)

    def timed(learner, count: int, offline: list[float] | None = None) -> float:
        for t in range(2):  # warm-up
            learner.step(contexts[t], rewards[t].__getitem__)
        if offline:
            offline[0] = 0.0
        start = time.perf_counter()
        for t in range(2, 2 + count):
            learner.step(contexts[t], rewards[t].__getitem__)
        return (time.perf_counter() - start) / count

    private = PrivateEpsilonGreedy(config, seed=seed)
    offline = _clock_dealer(private.engine.dealer)
    private_s = timed(private, rounds, offline)
    plain_s = timed(PlaintextEpsilonGreedy(config, seed=seed), twin_rounds)
    online_s = private_s - offline[0] / rounds
    traffic = private.engine.traffic
    return {
        "private_ms": 1e3 * private_s,
        "plain_ms": 1e3 * plain_s,
        "ratio": private_s / plain_s,
        "online_ms": 1e3 * online_s,
        "online_ratio": online_s / plain_s,
        "rounds": traffic.rounds[ROUND] / traffic.segments[ROUND],
        "bytes": traffic.total(ROUND).bytes / traffic.segments[ROUND],
        "messages": traffic.total(ROUND).messages / traffic.segments[ROUND],
    }


def time_rounds(configs: list[dict[str, Any]], rounds: int, twin_rounds: int, seed: int) -> dict[str, Any]:
    """Unit: :func:`round_costs` of every learner config, one after the other in this process."""
    return {"costs": [round_costs(MPCBanditConfig(**config), rounds, twin_rounds, seed) for config in configs]}


def rounds_task(label: str, configs: list[MPCBanditConfig], *, rounds: int, twin_rounds: int, seed: int) -> Task:
    """The :func:`time_rounds` unit of ``configs`` (whole configs in its key)."""
    configs_params = [mpc_store_params(config) for config in configs]
    params = {"configs": configs_params, "rounds": rounds, "twin_rounds": twin_rounds, "seed": seed}
    return Task(f"{_MODULE}:time_rounds", params, label)


def _time_op(run: Callable[[], object], repeat: int) -> float:
    run()
    start = time.perf_counter()
    for _ in range(repeat):
        run()
    return (time.perf_counter() - start) / repeat


def time_operations(n_arms: int, repeat: int, seed: int) -> dict[str, Any]:
    """Unit: communication rounds, bytes and time of add, mul, reciprocal and argmax on vectors of
    ``n_arms`` shared by 2 parties, and the time of the same operation in numpy."""
    rng = np.random.default_rng(seed)
    x, y, d = rng.normal(size=n_arms), rng.normal(size=n_arms), 1 + rng.random(n_arms)
    engine = Engine(2, seed=seed)
    with engine.phase("inputs"):
        sx, sy, sd = engine.input_many([(x, "p0"), (y, "p1"), (d, "p0")])
    ops = {
        "add": (lambda: sx + sy, lambda: x + y),
        "mul": (lambda: engine.mul(sx, sy), lambda: x * y),
        "reciprocal": (lambda: engine.reciprocal(sd), lambda: 1.0 / d),
        "argmax": (lambda: engine.argmax(sx), lambda: np.argmax(x)),
    }
    measured = {}
    for name in OPERATIONS:
        private, plain = ops[name]
        with engine.phase(name):
            private()
        rounds, volume = engine.traffic.rounds[name], engine.traffic.total(name).bytes
        with engine.phase(f"{name}-timed"):
            ours = _time_op(private, repeat)
        measured[name] = {"rounds": rounds, "bytes": volume, "private_s": ours, "numpy_s": _time_op(plain, 2000)}
    return {"operations": measured}


def operations_task(label: str, *, n_arms: int, repeat: int, seed: int) -> Task:
    return Task(f"{_MODULE}:time_operations", {"n_arms": n_arms, "repeat": repeat, "seed": seed}, label)
