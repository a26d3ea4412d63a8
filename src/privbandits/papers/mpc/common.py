"""Helpers the MPC reports share: verdicts, data notes and titles, the η grid, per-run means."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np


def verdict(held: bool, partly: bool = False) -> str:
    return "reproduced" if held else "partly" if partly else "not reproduced"


def data_of(points: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What the units say about their data (``source``, ``stand_in``, ``train``, ``test``): all agree."""
    return next(result["data"] for result in points.values() if "data" in result)


def short_name(data: dict[str, Any]) -> str:
    """The data set's name without its path: 'MNIST-5k (real MNIST, …)', 'Fashion-MNIST', …"""
    return data["source"].split(" at ")[0].split(",")[0]


def title(data: dict[str, Any], text: str) -> str:
    if data["stand_in"]:
        return f"{text}\nSTAND-IN DATA: scikit-learn digits, not MNIST"
    return f"{text}\n{short_name(data)}, {data['train']:,} rounds per sweep"


def stand_in_note(data: dict[str, Any]) -> str:
    """Which data ran, said in every report (the paper: one sweep of the 60,000 MNIST training images)."""
    if data["stand_in"]:
        return (
            f"DATA: {data['source']}. Real MNIST-5k is not in the data cache: run `privbandits data fetch mnist5k` "
            "(then data=auto picks it), or `privbandits data fetch fashion-mnist` and data=fashion for 60,000 rounds. "
            f"Sweeps are {data['train']} rounds, not the paper's 60,000, so absolute rewards differ."
        )
    from privbandits.papers.data_choice import shown_source

    scale = "the paper's scale" if data["train"] >= 60_000 else "the paper sweeps 60,000 MNIST training images"
    source = shown_source(data["source"])
    return (
        f"DATA: {source}; {data['train']:,} training rounds, {data['test']:,} held out ({scale}). "
        "Preprocessing as the paper: pixels / 255, PCA to 20 fitted on the training part, unit norm."
    )


def eta_grid(n_arms: int) -> list[float]:
    """The η values of Fig. 3 and 6: just above log|A| (uniform play), 3 … 9 above it, and ∞ (greedy)."""
    low = math.log(n_arms)
    return [round(low + 0.01, 2)] + [e for e in (3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0) if e > low + 0.1] + [math.inf]


def eta_axis(etas: Iterable[float]) -> list[float]:
    """Plot positions of ``etas``: ∞ drawn at 10."""
    return [e if math.isfinite(e) else 10.0 for e in etas]


def run_mean(points: dict[str, dict[str, Any]], labels: Iterable[str], field: str = "mean") -> float:
    """Mean of ``field`` over the units ``labels`` (the runs of one setting)."""
    return float(np.mean([points[label][field] for label in labels]))
