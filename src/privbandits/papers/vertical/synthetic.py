"""Synthetic contexts and party layouts shared by the cost measurements (Fig. 5) and the privacy audit."""

from __future__ import annotations

import numpy as np


def unit_rows(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Standard normal vectors along the last axis, scaled to unit norm."""
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def even_partition(dim: int, n_parties: int) -> list[int]:
    """``dim`` features split among ``n_parties``: ``dim // n_parties`` each, the remainder to the last."""
    base = dim // n_parties
    return [base] * (n_parties - 1) + [dim - base * (n_parties - 1)]
