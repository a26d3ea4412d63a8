"""What several P2B figures share: modes, verdicts, the ordering claim and the three curves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privbandits.experiments.paper import Claim

SETTINGS = ("cold", "warm_non_private", "warm_private")
EARLY_FRACTION = 0.7
STYLES = {"cold": ("bs-", "Cold"), "warm_non_private": ("ko-", "Warm non-private"),
          "warm_private": ("r*-", "Warm private (P2B)")}  # fmt: skip
MODE_TITLES = {
    "default": "one-hot codes, a warm copy per user",
    "reference": "reference-compatible: scalar codes, one shared warm agent",
}


def mode_of(figure: str, reference_mode: bool) -> tuple[str, str, str]:
    """Report name, mode description and simulation mode of ``figure`` in the default or reference mode."""
    if reference_mode:
        return f"{figure}-reference", "reference-compatible mode", "reference"
    return figure, MODE_TITLES["default"], "default"


def verdict(held: int, total: int) -> str:
    return "reproduced" if held == total else "partly" if 2 * held >= total else "not reproduced"


def ordering_claim(where: str, points: dict[Any, dict[str, float]]) -> Claim:
    """Warm non-private ≥ warm private > cold, counted over ``points``."""
    ordered = [k for k, v in points.items() if v["warm_non_private"] >= v["warm_private"] > v["cold"]]
    private_beats_cold = [k for k, v in points.items() if v["warm_private"] > v["cold"]]
    return Claim(
        where,
        "warm non-private ≥ warm private > cold",
        "yes",
        f"{len(ordered)}/{len(points)} points; private > cold at {len(private_beats_cold)}/{len(points)}",
        verdict(len(ordered), len(points)),
    )


def plot_settings(
    ax,
    points: dict[Any, dict[str, float]],
    reference: Mapping[Any, tuple[float, ...]] | None = None,
    *,
    scale: float = 1.0,
    labels: dict[str, str] | None = None,
) -> None:
    """The three settings against ``points``' keys (solid), and the reference's (dotted) if given."""
    for index, (setting, (style, label)) in enumerate(STYLES.items()):
        label = (labels or {}).get(setting, label)
        ax.plot(list(points), [scale * v[setting] for v in points.values()], style, label=label)
        if reference:
            ax.plot(list(reference), [scale * r[index] for r in reference.values()], style[:2] + ":", alpha=0.4)
