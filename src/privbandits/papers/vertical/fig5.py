"""Fig. 5 of the vertical O3M paper: relative cost and communication per step.

Three kinds of numbers: the paper's op-count model (spec §8.3, computed in the report), wall-time
ratios of the vertical protocol against the central learner measured on this machine (timings: one
task per (family, d, K)), and payload bytes per step counted by the message layer (one task per
(d, K) point).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from scipy import fft
from threadpoolctl import threadpool_limits

from privbandits.experiments.paper import Claim, PaperReport
from privbandits.experiments.tasks import Task
from privbandits.linear import LinTS, LinUCB
from privbandits.papers.vertical import reference
from privbandits.papers.vertical.options import Fig5Options
from privbandits.papers.vertical.synthetic import even_partition, unit_rows
from privbandits.privacy.masks import draw_mask
from privbandits.protocols.vertical.core import VerticalFederatedBandit

_FN = "privbandits.papers.vertical.fig5"
FAMILIES = ("UCB", "TS")
REPEATS = 3
"""Timed runs per learner; the fastest is kept."""
SEED = 0
"""Seed of the timed contexts, rewards and mask."""
MODEL_DIMS = np.unique(np.geomspace(10, 5000, 60).astype(int))
"""Dimensions at which the op-count model is drawn."""
_BYTE_VERDICTS = (((1000, 1000), 3, "reproduced (bound)"), ((5000, 1000), 2, "paper figure inconsistent"))
"""(d, K), decimals of our GB and verdict of each byte claim: the paper's formula gives 0.04 GB but not 6.25 GB."""


# -- measurements -----------------------------------------------------------------------------
def op_counts(dim: int, n_arms: int, n_parties: int) -> dict[str, float]:
    """Per-step elementary operations of the paper's cost model (App. C.1; spec §8.3).

    Naive matrix costs, an O(d³) inverse every step (the paper's model, not
    this library's Sherman–Morrison updates), masking K·d² and summing K·M·d.
    """
    d, k, m = float(dim), float(n_arms), float(n_parties)
    masking = k * d * d + k * m * d
    linucb = k * d + d**3 + k * d * d + k * d + k + 2 * d * d + d
    lints = d * d + d**3 + k * d + k + d**3 + d * d + 2 * d
    return {"LinUCB": linucb, "VFUCB": linucb + masking, "LinTS": lints, "VFTS": lints + masking}


def _step_time(policy, contexts: np.ndarray, rewards: np.ndarray) -> float:
    start = time.perf_counter()
    for t in range(len(contexts)):
        policy.update(contexts[t], policy.select(contexts[t]), rewards[t])
    return (time.perf_counter() - start) / len(contexts)


def measure_step_time(
    dim: int, n_arms: int, n_parties: int, family: str, rounds: int, repeats: int = REPEATS, seed: int = SEED
) -> tuple[float, float]:
    """Seconds per step of the central learner and of the whole vertical protocol on the same contexts.

    Fastest of ``repeats`` fresh runs each (after a warm-up that compiles the
    kernels), so one-off costs and machine noise do not enter the ratio.
    """
    rng = np.random.default_rng(seed)
    contexts = unit_rows(rng, (rounds, n_arms, dim))
    rewards = rng.standard_normal(rounds) * 0.1

    def learner():
        return LinUCB(n_arms, dim, alpha=0.5) if family == "UCB" else LinTS(n_arms, dim, v=0.01, rng=seed)

    partition = even_partition(dim, n_parties)
    mask = draw_mask(partition, rng=rng)
    _step_time(learner(), contexts[:2], rewards[:2])
    central = min(_step_time(learner(), contexts, rewards) for _ in range(repeats))
    vertical = min(
        _step_time(VerticalFederatedBandit(partition, learner(), mask=mask), contexts, rewards) for _ in range(repeats)
    )
    return central, vertical


def measure_step_bytes(dim: int, n_arms: int, n_parties: int) -> tuple[float, float]:
    """Payload bytes one protocol step sends to the active party, and the setup bytes, from the message layer.

    The mask is the orthonormal DCT-II matrix (dense, orthogonal and passing
    :func:`check_mask`, cheap to build) instead of a Haar draw (an O(d³) QR,
    about a minute at d = 5000): the bytes sent do not depend on which
    orthogonal Q is used.
    """
    rng = np.random.default_rng(0)
    mask = fft.dct(np.eye(dim), norm="ortho", axis=0)
    policy = VerticalFederatedBandit(even_partition(dim, n_parties), LinUCB(n_arms, dim, refresh_every=0), mask=mask)
    contexts = unit_rows(rng, (n_arms, dim))
    policy.update(contexts, policy.select(contexts), 0.0)
    traffic = policy.traffic
    return float(traffic.total("round", receiver="active").bytes), float(traffic.total("setup").bytes)


# -- tasks --------------------------------------------------------------------------------------
def step_times(
    dim: int, n_arms: int, n_parties: int, family: str, rounds: int, repeats: int, seed: int
) -> dict[str, float]:
    """Task: seconds per step, central and vertical, with one BLAS thread (a timing, not reproducible bit for bit)."""
    with threadpool_limits(limits=1):
        central, vertical = measure_step_time(dim, n_arms, n_parties, family, rounds, repeats, seed)
    return {"central_s": central, "vertical_s": vertical}


def step_bytes(dim: int, n_arms: int, n_parties: int) -> dict[str, float]:
    """Task: payload bytes of one protocol step received by the active party, and the setup bytes."""
    step, setup = measure_step_bytes(dim, n_arms, n_parties)
    return {"step_bytes": step, "setup_bytes": setup}


def _time_label(family: str, dim: int, n_arms: int) -> str:
    return f"time {family} d={dim} K={n_arms}"


def _bytes_label(dim: int, n_arms: int) -> str:
    return f"bytes d={dim} K={n_arms}"


def tasks(options: Fig5Options) -> list[Task]:
    """One timing task per (family, K, d), one byte count per (d, K) point."""
    timing = [
        Task(
            f"{_FN}:step_times",
            {
                "dim": d,
                "n_arms": k,
                "n_parties": options.n_parties,
                "family": family,
                "rounds": options.time_rounds,
                "repeats": REPEATS,
                "seed": SEED,
            },
            _time_label(family, d, k),
        )
        for family in FAMILIES
        for k in options.time_arms
        for d in options.time_dims
    ]
    counting = [
        Task(
            f"{_FN}:step_bytes",
            {"dim": p.dim, "n_arms": p.n_arms, "n_parties": options.n_parties},
            _bytes_label(p.dim, p.n_arms),
        )
        for p in options.byte_points
    ]
    return timing + counting


# -- report -------------------------------------------------------------------------------------
def _ratio(counts: dict[str, float], family: str) -> float:
    return counts[f"VF{family}"] / counts[f"Lin{family}"]


def _cost_panels(axes, options: Fig5Options, measured: dict[tuple[str, int, int], float]) -> list[list[str]]:
    """Panels (a) and (b): op-model curves and measured ratios; returns their table."""
    m, dims = options.n_parties, options.time_dims
    rows = [["family", "K", "d", "op-model ratio", "measured wall-time ratio"]]
    for ax, family in zip(axes, FAMILIES, strict=True):
        for k in options.time_arms:
            ratio = np.array([_ratio(op_counts(d, k, m), family) for d in MODEL_DIMS])
            (line,) = ax.plot(MODEL_DIMS, ratio, label=f"op model, K={k}")
            ax.plot(
                dims,
                [measured[(family, d, k)] for d in dims],
                "o--",
                color=line.get_color(),
                label=f"measured here, K={k}",
            )
            rows += [
                [
                    f"VF{family}/Lin{family}",
                    str(k),
                    str(d),
                    f"{_ratio(op_counts(d, k, m), family):.2f}",
                    f"{measured[(family, d, k)]:.2f}",
                ]
                for d in dims
            ]
        ax.set_xscale("log")
        ax.set(
            title=f"({'a' if family == 'UCB' else 'b'}) relative cost VF{family} / Lin{family}",
            xlabel="context dimension d",
            ylabel="relative cost",
        )
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    return rows


def _bytes_table(options: Fig5Options, points: dict[str, dict[str, Any]]) -> list[list[str]]:
    m = options.n_parties
    rows = [["d", "K", "measured bytes/step to AP", "8(M-1)Kd", "paper bound 8MKd", "setup bytes (8d²)"]]
    for p in options.byte_points:
        d, k = p.dim, p.n_arms
        counted = points[_bytes_label(d, k)]
        rows.append(
            [
                str(d),
                str(k),
                f"{counted['step_bytes'] / 1e9:.4f} GB",
                f"{8 * (m - 1) * k * d / 1e9:.4f} GB",
                f"{8 * m * k * d / 1e9:.4f} GB",
                f"{counted['setup_bytes'] / 1e9:.4f} GB",
            ]
        )
    return rows


def _bytes_panel(ax, options: Fig5Options, measured_bytes: dict[tuple[int, int], float]) -> None:
    """Panel (c): the paper's 8MKd formula, the measured bytes, and the paper's 6.25 GB point."""
    for k in sorted({k for _, k in measured_bytes}):
        ax.plot(MODEL_DIMS, 8 * options.n_parties * k * MODEL_DIMS / 1e9, label=f"paper formula 8MKd, K={k}")
    ds, _ = zip(*measured_bytes, strict=True)
    ax.plot(ds, [b / 1e9 for b in measured_bytes.values()], "ko", label="measured (received by AP)")
    (d, k), _, _ = _BYTE_VERDICTS[-1]
    gb = reference.FIG5_GB_PER_STEP[(d, k)]
    ax.plot([d], [gb], "r*", markersize=12, label=f"paper's {gb} GB (d={d}, K={k})")
    ax.set(
        xscale="log",
        yscale="log",
        title="(c) communication per step",
        xlabel="context dimension d",
        ylabel="GB per step",
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def _ratio_claims(options: Fig5Options, measured: dict[tuple[str, int, int], float]) -> list[Claim]:
    m = options.n_parties
    grid = [(d, k) for d in (100, 500, 1000, 5000) for k in (100, 500, 1000)]
    ucb_model = [_ratio(op_counts(d, k, m), "UCB") for d, k in grid]
    ucb_measured = [v for (family, _, _), v in measured.items() if family == "UCB"]
    ts_small, ts_large = _ratio(op_counts(10, 1000, m), "TS"), _ratio(op_counts(5000, 100, m), "TS")
    return [
        Claim(
            "5(a)",
            "VFUCB costs at most about 2x LinUCB",
            reference.FIG5_UCB_RATIO,
            f"op model {min(ucb_model):.2f}-{max(ucb_model):.2f}x; measured {min(ucb_measured):.2f}-"
            f"{max(ucb_measured):.2f}x",
            "reproduced (model)",
        ),
        Claim(
            "5(b)",
            "VFTS starts above 5x and falls to about 1x as d grows",
            reference.FIG5_TS_RATIO,
            f"op model {ts_small:.1f}x at d=10, K=1000; {ts_large:.2f}x at d=5000, K=100",
            "reproduced (model)",
        ),
    ]


def _bytes_claims(options: Fig5Options, measured_bytes: dict[tuple[int, int], float]) -> list[Claim]:
    claims = []
    for (d, k), decimals, verdict in _BYTE_VERDICTS:
        if (d, k) in measured_bytes:
            gb = reference.FIG5_GB_PER_STEP[(d, k)]
            claims.append(
                Claim(
                    "5(c)",
                    f"d={d}, K={k}: {gb} GB per step",
                    f"{gb} GB",
                    f"{measured_bytes[(d, k)] / 1e9:.{decimals}f} GB received by the AP; "
                    f"8MKd bound {8 * options.n_parties * d * k / 1e9:.2f} GB",
                    verdict,
                )
            )
    return claims


NOTES = [
    "The op-count model is the paper's App. C.1 (naive matrix costs, an O(d³) inverse per step); its constants "
    "are not printed in the paper, so spec §8.3's per-step counts are used.",
    "Measured ratios use this library's learners, which update A⁻¹ by Sherman–Morrison (O(d²)) instead of "
    "inverting (O(d³)); without the d³ term the K·d² masking cost stays visible, so measured VFUCB ratios "
    "stay near 2 at large d rather than falling to 1. LinTS factorises A⁻¹ each step (O(d³)), so VFTS "
    "ratios do fall towards 1.",
    "6.25 GB cannot come from the paper's own formula: 8·K·M·d gives 0.04 GB at d=1000 (matching the paper) "
    "but 0.2 GB at d=5000. Counting the d² mask per arm (8·K·d² = 200 GB) or per party (8·M·d² = 1 GB) "
    "does not give 6.25 GB either (spec §8.3).",
    "Bytes are payload only (float64 arrays); the per-round control messages (user id, round, K item ids) "
    "add 8·(K+2) bytes per passive party and are listed separately in the traffic ledger.",
]


def report(options: Fig5Options, points: dict[str, dict[str, Any]], out: Path) -> PaperReport:
    """Fig. 5: relative cost from the op-count model and measured; bytes per step measured."""
    measured = {
        (family, d, k): points[_time_label(family, d, k)]["vertical_s"] / points[_time_label(family, d, k)]["central_s"]
        for family in FAMILIES
        for k in options.time_arms
        for d in options.time_dims
    }
    measured_bytes = {
        (p.dim, p.n_arms): points[_bytes_label(p.dim, p.n_arms)]["step_bytes"] for p in options.byte_points
    }
    paper = PaperReport("vertical-fig5", f"Vertical O3M paper, Fig. 5 (cost; M = {options.n_parties})")
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8), dpi=110)
    paper.tables["Relative cost: op-count model and measured wall time"] = _cost_panels(axes[:2], options, measured)
    paper.tables["Communication per step (message layer)"] = _bytes_table(options, points)
    _bytes_panel(axes[2], options, measured_bytes)
    fig.suptitle("Vertical O3M paper Fig. 5 reproduced (op model: spec §8.3; measured: this machine, 1 BLAS thread)")
    paper.add_figure(fig, out / "vertical-fig5.png")
    paper.claims += _ratio_claims(options, measured) + _bytes_claims(options, measured_bytes)
    paper.notes += NOTES
    return paper
