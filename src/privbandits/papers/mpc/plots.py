"""Figure helpers of the MPC reports (matplotlib imported here, not by the options)."""

from __future__ import annotations

from typing import Any

from privbandits.experiments.paper import plt


def axes(columns: int = 1) -> tuple[Any, Any]:
    """A figure of one axes (7 × 4.5 in) or a row of ``columns`` (12 × 4.3 in), at 110 dpi."""
    if columns == 1:
        return plt.subplots(figsize=(7, 4.5), dpi=110)
    return plt.subplots(1, columns, figsize=(12, 4.3), dpi=110)


def finish(ax: Any, legend: bool | dict[str, Any] = True, **labels: Any) -> None:
    """Set ``labels`` (xlabel, title, scales …), a light grid and a legend (``legend``: its options, or False)."""
    ax.set(**labels)
    ax.grid(True, alpha=0.3)
    if legend is not False:
        ax.legend(**(legend if isinstance(legend, dict) else {}))
