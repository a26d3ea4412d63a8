"""Every point a system offers on an environment: its config policy, its ε and its privacy model.

A point is one policy table of a config (so its runs are the units a TOML config would run);
its ``epsilon`` is where the map places it: the DP baselines' and FCLUB's ε, the MPC learner's
per-round η, P2B's −ln(1 − p), and ∞ for the lossless or non-private ones. Whether a point can
run on an environment is decided by the config's own compatibility checks (:func:`placed`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from privbandits.papers.privacy_map.environments import MapEnvironment
from privbandits.papers.privacy_map.options import MapOptions

MPC_ARMS = 10
"""|A| of the MPC learner's environment (10 classes): η = log(|A|/ε)."""


@dataclass(frozen=True)
class Point:
    """One point of the map: ``system`` (its marker), ``model`` (a SEMANTICS key), ``epsilon`` (x position).

    ``reads`` names the run metric a population point reads (P2B); ``runs_of`` is the label of the
    point whose runs it reads (itself unless derived from another point's runs).
    """

    label: str
    system: str
    model: str
    epsilon: float
    policy: dict[str, Any]
    seeds: tuple[int, ...]
    reads: str | None = None
    runs_of: str | None = None

    @property
    def source(self) -> str:
        return self.runs_of or self.label

    @property
    def runs(self) -> bool:
        """Whether this point has runs of its own (derived points read another's)."""
        return self.runs_of is None


def _fmt(value: float) -> str:
    return f"{value:g}"


def _lossless(env: MapEnvironment, options: MapOptions) -> list[Point]:
    layout = "shared" if env.per_arm else "disjoint"
    seeds, alpha = options.seeds, options.alpha
    linucb: dict[str, Any] = {"kind": "linucb", "alpha": alpha, "layout": layout, "label": "LinUCB (non-private)"}
    partition = list(env.partition)
    vf: dict[str, Any] = {"kind": "vfucb", "alpha": alpha, "partition": partition, "label": "O3M VFUCB"}
    sa = vf | {"secure_aggregation": True, "label": "O3M VFUCB + secure aggregation"}
    random: dict[str, Any] = {"kind": "random", "label": "Uniform random"}
    return [
        Point(random["label"], "Uniform random (uses no data)", "random", 0.0, random, seeds),
        Point(linucb["label"], "LinUCB (non-private)", "none", math.inf, linucb, seeds),
        Point(vf["label"], "O3M VFUCB", "o3m", math.inf, vf, seeds),
        Point(sa["label"], "O3M VFUCB + secure aggregation", "o3m_sa", math.inf, sa, seeds),
    ]


def _fclub(options: MapOptions) -> list[Point]:
    label = "FCLUB-DC (non-private)"
    points = [
        Point(
            label,
            "FCLUB-DC (non-private)",
            "fclub_none",
            math.inf,
            {"kind": "fclub", "variant": "fclub-dc", "label": label},
            options.seeds,
        )
    ]
    # named either way: the default is analytic, and calibration = paper's points were stored at the paper's form
    noise = {"noise_variance": "analytic" if options.calibration == "analytic" else "squared_log"}
    for eps in options.epsilons:
        label = f"CDP-FCLUB-DC ε={_fmt(eps)}"
        policy = {"kind": "fclub", "variant": "cdp-fclub-dc", "epsilon": eps, "delta": options.delta, "label": label}
        policy |= noise
        points.append(Point(label, "CDP-FCLUB-DC", "fclub_cdp", eps, policy, options.seeds))
    return points


def eta_of(exploration: float, arms: int = MPC_ARMS) -> float:
    """The MPC learner's per-round privacy loss η = log(|A|/ε) (MPC paper Thm. 1)."""
    return math.log(arms / exploration)


def _mpc(options: MapOptions) -> list[Point]:
    points = []
    for explore in options.explorations:
        eta = eta_of(explore)
        twin = f"MPC ε-greedy twin η={eta:.2f}"
        policy = {"kind": "plaintext_mpc_epsilon_greedy", "epsilon": explore, "label": twin}
        points.append(Point(twin, "MPC ε-greedy (plaintext twin)", "mpc_eta", eta, policy, options.seeds))
        if options.private_mpc_seeds:
            label = f"MPC ε-greedy η={eta:.2f}"
            policy = {"kind": "mpc_epsilon_greedy", "epsilon": explore, "label": label}
            points.append(
                Point(label, "MPC ε-greedy (secret-shared)", "mpc_eta", eta, policy, options.private_mpc_seeds)
            )
    return points


def p2b_epsilon(participation: float) -> float:
    """P2B's ε = −ln(1 − p) per context vector (pre-sampling + crowd-blending)."""
    return -math.log1p(-participation)


def _p2b(options: MapOptions) -> list[Point]:
    points = []
    for p in options.participations:
        label = f"P2B p={_fmt(p)}"
        policy = {"kind": "p2b", "participation": p, "n_codes": options.p2b_codes, "label": label}
        points.append(Point(label, "P2B (warm, private)", "p2b", p2b_epsilon(p), policy, options.seeds, "warm_private"))
    largest = max(points, key=lambda point: point.epsilon)
    share = f"p={_fmt(largest.policy['participation'])}"
    points.append(
        Point(
            f"P2B non-private ({share})",
            "P2B non-private (raw contexts)",
            "p2b_none",
            math.inf,
            largest.policy,
            options.seeds,
            "warm_non_private",
            largest.label,
        )
    )
    points.append(
        Point(
            "cold start",
            "cold start (nothing shared)",
            "p2b_cold",
            0.0,
            largest.policy,
            options.seeds,
            "cold",
            largest.label,
        )
    )
    return points


DP_BASELINES = {
    "joint_dp_linucb": ("Joint-DP LinUCB", "joint_dp"),
    "local_dp_linucb": ("Local-DP LinUCB", "local_dp"),
    "shuffle_dp_linucb": ("Shuffle-DP LinUCB", "shuffle_dp"),
}


SHUFFLE_DEFAULT_BATCH = 100
"""Shuffle-DP LinUCB's batch when the map's ``shuffle_batch`` is not given."""

AMPLIFICATION_BOUND = "Feldman et al. Thm 3.1"
"""The bound an amplified shuffle point's central ε comes from, as its label names it (labels hold at most 80
characters): Feldman, McMillan & Talwar 2021, Theorem 3.1 (:mod:`~privbandits.privacy.amplification`)."""

FACTORIZATION = "Joint-DP LinUCB (sqrt factorization)"
"""The system of joint-DP LinUCB releasing its prefix sums by the square-root factorization (issue 47 item 5)."""


def _shuffle_calibration(epsilon: float, delta: float, batch: int, calibration: str):
    from privbandits.protocols.dp.shuffle import shuffle_calibration

    return shuffle_calibration(epsilon, delta, batch, calibration)


def _shuffle_amplifies(epsilon: float, delta: float, batch: int, calibration: str) -> bool:
    """Whether a shuffled batch of ``batch`` reports amplifies at (ε, δ) (else it is only local DP)."""
    return _shuffle_calibration(epsilon, delta, batch, calibration).amplified


def smallest_amplifying_batch(epsilon: float, delta: float, horizon: int) -> int | None:
    """The smallest batch of at most ``horizon`` reports whose shuffle amplifies at (ε, δ), or None when none does
    (amplification only grows with the batch, so bisection finds it)."""
    if not _shuffle_amplifies(epsilon, delta, horizon, "analytic"):
        return None
    low, high = 1, horizon  # low never amplifies, high does
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if _shuffle_amplifies(epsilon, delta, middle, "analytic") else (middle, high)
    return high


def shuffle_batches(env: MapEnvironment, options: MapOptions) -> list[int]:
    """The extra shuffle batch sizes: ``shuffle_batches``, else the smallest that fits ``env``'s horizon and
    amplifies at every map ε ≤ 1 (the smallest ε when none is ≤ 1); the base batch is not repeated."""
    base = options.shuffle_batch or SHUFFLE_DEFAULT_BATCH
    if options.shuffle_batches is not None:
        return [batch for batch in options.shuffle_batches if batch != base]
    strong = [eps for eps in options.epsilons if eps <= 1] or [min(options.epsilons)]
    batch = smallest_amplifying_batch(max(strong), options.delta, env.horizon)
    return [] if batch is None or batch == base else [batch]


def _shuffle_point(eps: float, batch: int, options: MapOptions) -> Point:
    """A Shuffle-DP LinUCB point at an extra batch size: amplified (its central ε and the bound named) or local DP."""
    system = f"Shuffle-DP LinUCB (batch {batch})"
    cal = _shuffle_calibration(eps, options.delta, batch, options.calibration)
    stated = f"Shuffle-DP LinUCB ε={_fmt(eps)} (batch {batch}:"
    if cal.amplified:
        label = f"{stated} central ε={cal.central_epsilon:.3g}, {AMPLIFICATION_BOUND})"
        where = (system, "shuffle_dp")
    else:
        label = f"{stated} not amplified, local DP)"
        where = (f"{system}, not amplified (local DP)", "local_dp")
    policy = {"kind": "shuffle_dp_linucb", "epsilon": eps, "delta": options.delta, "alpha": options.alpha}
    policy |= {"calibration": options.calibration, "batch_size": batch, "label": label}
    return Point(label, *where, eps, policy, options.seeds)


def _factorized(options: MapOptions) -> list[Point]:
    """Joint-DP LinUCB with the square-root factorization at the map's ε (it needs the analytic calibration)."""
    if options.calibration != "analytic":
        return []
    points = []
    for eps in options.epsilons:
        label = f"{FACTORIZATION} ε={_fmt(eps)}"
        policy = {"kind": "joint_dp_linucb", "epsilon": eps, "delta": options.delta, "alpha": options.alpha}
        policy |= {"calibration": "analytic", "continual_release": "sqrt_factorization", "label": label}
        points.append(Point(label, FACTORIZATION, "joint_dp", eps, policy, options.seeds))
    return points


def _dp(env: MapEnvironment, options: MapOptions) -> list[Point]:
    points = []
    batch = options.shuffle_batch or SHUFFLE_DEFAULT_BATCH
    for kind, (system, model) in DP_BASELINES.items():
        for eps in options.epsilons:
            label = f"{system} ε={_fmt(eps)}"
            policy = {"kind": kind, "epsilon": eps, "delta": options.delta, "alpha": options.alpha}
            policy |= {"calibration": options.calibration}  # named either way: the learners' default is analytic
            where = (system, model)
            if kind == "shuffle_dp_linucb":
                policy |= {} if options.shuffle_batch is None else {"batch_size": batch}
                if not _shuffle_amplifies(eps, options.delta, batch, options.calibration):
                    label = f"{label} (batch {batch}: not amplified, local DP)"
                    where = (f"{system}, not amplified (local DP)", "local_dp")
            points.append(Point(label, *where, eps, policy | {"label": label}, options.seeds))
        if kind == "joint_dp_linucb":
            points += _factorized(options)
    extra = shuffle_batches(env, options)
    return points + [_shuffle_point(eps, size, options) for size in extra for eps in options.epsilons]


def candidates(env: MapEnvironment, options: MapOptions) -> list[Point]:
    """Every point of every system, before the environment's compatibility checks."""
    return [*_lossless(env, options), *_fclub(options), *_mpc(options), *_p2b(options), *_dp(env, options)]


def config_of(env: MapEnvironment, point: Point):
    """The one-policy experiment config whose run is this point's unit (ConfigError if it cannot run)."""
    from privbandits.experiments.config import parse_config

    data = {
        "name": env.experiment,
        "horizon": env.horizon,
        "seeds": list(point.seeds),
        "environment": env.environment,
        "policies": [point.policy],
    }
    return parse_config(data, source=f"privacy-map {env.key}")


def placed(env: MapEnvironment, options: MapOptions) -> tuple[list[Point], dict[str, str]]:
    """The points that can run on ``env``, and for each refused system the config's reason (first one)."""
    from privbandits.experiments.config import ConfigError

    kept: list[Point] = []
    refused: dict[str, str] = {}
    for point in candidates(env, options):
        try:
            config_of(env, point)
        except ConfigError as error:
            reason = str(error).split("\n", 1)[-1].strip()
            if point.runs:
                refused.setdefault(point.system, reason.removeprefix("policies[0]: ").removeprefix("policies[0]."))
            continue
        kept.append(point)
    return kept, refused
