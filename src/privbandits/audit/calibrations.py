"""The calibration tables of the audit report: each Gaussian mechanism's σ under the paper's formula and
the analytic Gaussian, and the ε that PLD and RDP accounting give the paper's σ.

:func:`calibration_unit` is a task function (``privbandits.audit.calibrations:calibration_unit``): the
tables are one store unit, so the site rebuilds them from the store alone.
"""

from __future__ import annotations

import math
from typing import Any

from privbandits.privacy.calibration import analytic_gaussian_std, pld_epsilon, rdp_epsilon

EPSILONS = (0.5, 1.0, 2.0, 5.0, 10.0)
"""The claimed ε of the privacy map's DP baselines."""
COMPOSITIONS = ((5.0, 100), (10.0, 1000), (178.5, 12))
"""(noise multiplier, compositions) of the PLD vs RDP table: issue 31's example, a long run, joint-DP
LinUCB's tree at ε = 1 (σ/Δ = 357/2 over m = 12 nodes)."""


def _mechanisms(horizon: int, fclub_horizon: int) -> list[tuple[str, float, Any, float, int]]:
    """(name, δ, paper σ of ε, sensitivity, compositions per datum) of each Gaussian mechanism."""
    from privbandits.privacy.tree_mechanism import REPLACE_SENSITIVITY, node_variance
    from privbandits.protocols.dp.joint import joint_noise_std, tree_levels
    from privbandits.protocols.dp.local import REPORT_SENSITIVITY, local_noise_std
    from privbandits.protocols.fclub.config import Calibration, FCLUBConfig

    depth = Calibration(FCLUBConfig(horizon=fclub_horizon), 1, 1, 1).depth(1)
    fclub_delta = FCLUBConfig().delta
    return [
        (f"dp_linucb.joint (T = {horizon:,})", 1e-5, lambda e: joint_noise_std(e, 1e-5, horizon),
         REPLACE_SENSITIVITY, tree_levels(horizon)),
        ("dp_linucb.local", 1e-5, lambda e: local_noise_std(e, 1e-5), REPORT_SENSITIVITY, 1),
        (f"fclub.pvt (T = {fclub_horizon:,}, ν = {depth})", fclub_delta,
         lambda e: math.sqrt(node_variance(e, fclub_delta, depth)), REPLACE_SENSITIVITY, depth),
    ]  # fmt: skip


def sigma_rows(horizon: int = 2_000, fclub_horizon: int = 2_000) -> list[dict[str, Any]]:
    """Paper vs analytic σ at each claimed ε, and the ε the paper's σ really gives (PLD, with RDP beside)."""
    rows = []
    for name, delta, paper, sensitivity, compositions in _mechanisms(horizon, fclub_horizon):
        for epsilon in EPSILONS:
            old = paper(epsilon)
            new = analytic_gaussian_std(epsilon, delta, sensitivity, compositions)
            rows.append({
                "mechanism": name, "epsilon": epsilon, "delta": delta, "compositions": compositions,
                "paper_std": old, "analytic_std": new, "ratio": old / new,
                "paper_pld_epsilon": pld_epsilon(old, compositions, delta, sensitivity),
                "paper_rdp_epsilon": rdp_epsilon(old, compositions, delta, sensitivity),
            })  # fmt: skip
    return rows


def composition_rows(delta: float = 1e-5) -> list[dict[str, Any]]:
    """ε at δ of k Gaussian mechanisms of noise multiplier z: PLD beside RDP."""
    return [
        {"noise_multiplier": z, "compositions": k, "delta": delta,
         "pld_epsilon": pld_epsilon(z, k, delta, 1.0), "rdp_epsilon": rdp_epsilon(z, k, delta, 1.0)}
        for z, k in COMPOSITIONS
    ]  # fmt: skip


SIGMA_HEADER = ["mechanism", "claimed ε", "δ", "nodes per datum", "paper σ", "analytic σ", "paper / analytic",
                "paper σ's ε (PLD)", "paper σ's ε (RDP)"]  # fmt: skip
COMPOSITION_HEADER = ["noise multiplier", "compositions", "δ", "ε (PLD)", "ε (RDP)", "RDP / PLD"]


def sigma_cells(row: dict[str, Any]) -> list[str]:
    return [row["mechanism"], f"{row['epsilon']:g}", f"{row['delta']:g}", str(row["compositions"]),
            f"{row['paper_std']:.4g}", f"{row['analytic_std']:.4g}", f"{row['ratio']:.2f}",
            f"{row['paper_pld_epsilon']:.3g}", f"{row['paper_rdp_epsilon']:.3g}"]  # fmt: skip


def composition_cells(row: dict[str, Any]) -> list[str]:
    return [f"{row['noise_multiplier']:g}", f"{row['compositions']:,}", f"{row['delta']:g}",
            f"{row['pld_epsilon']:.4g}", f"{row['rdp_epsilon']:.4g}",
            f"{row['rdp_epsilon'] / row['pld_epsilon']:.3f}"]  # fmt: skip


FUNCTION = "privbandits.audit.calibrations:calibration_unit"


def calibration_unit(horizon: int = 2_000, fclub_horizon: int = 2_000) -> dict[str, Any]:
    """Both tables as one store unit."""
    return {"sigma": sigma_rows(horizon, fclub_horizon), "composition": composition_rows()}


SIGMA_TITLE = "Calibration: the paper's σ against the analytic Gaussian"
SIGMA_NOTE = (
    '`calibration = "analytic"` (DP LinUCB baselines) and `noise_variance = "analytic"` (FCLUB) select the '
    "analytic Gaussian (Balle & Wang 2018), the default of both; the paper's formula is asked for by name "
    "(the reproductions of the papers' numbers). The last two columns are "
    "the ε the paper's σ really gives at δ. Both σ are at the bare sensitivity Δ; a learner calibrates at the "
    "sensitivity its data have once snapped to the noise grid, min(Δ + g·√n, 2√2) "
    "(privbandits.privacy.calibration.snapped_std), so its σ is larger by a factor that depends on its dimension "
    "and is at most √2."
)
COMPOSITION_TITLE = "Accounting: PLD against RDP"


def tables_for_print(tables: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows of cells) of both tables (a :func:`calibration_unit` result)."""
    return [
        (SIGMA_TITLE, SIGMA_HEADER, [sigma_cells(row) for row in tables["sigma"]]),
        (COMPOSITION_TITLE, COMPOSITION_HEADER, [composition_cells(row) for row in tables["composition"]]),
    ]


def markdown(tables: dict[str, Any]) -> str:
    """Both tables as Markdown."""
    text = []
    for title, header, lines in tables_for_print(tables):
        text += [f"## {title}", ""] + ([SIGMA_NOTE, ""] if title == SIGMA_TITLE else [])
        text += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        text += ["| " + " | ".join(line) + " |" for line in lines] + [""]
    return "\n".join(text)
