"""What every mechanism audit declares: its claim, its neighbouring relation and its sampler."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Sampler = Callable[[int, np.random.Generator, "Weakening"], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Weakening:
    """A deliberately weakened copy of a mechanism, injected by the audit (the mechanism's code is untouched).

    ``scale`` multiplies the mechanism's calibrated noise (for the ε-greedy release: its exploration
    probability); ``drop`` removes the noise term the mechanism names in :attr:`MechanismAudit.dropped`.
    """

    scale: float = 1.0
    drop: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.scale, int | float) and 0.0 < self.scale <= 1.0):
            raise ValueError(f"weakening scale must be in (0, 1], got {self.scale!r}")

    @property
    def none(self) -> bool:
        return self.scale == 1.0 and not self.drop

    def describe(self, dropped: str, scaled: str = "noise") -> str:
        if self.none:
            return "as calibrated"
        parts = [f"{scaled} × {self.scale:g}"] if self.scale != 1.0 else []
        return ", ".join(parts + ([f"{dropped} dropped"] if self.drop else []))

    def as_dict(self) -> dict[str, float | bool]:
        return {"scale": float(self.scale), "drop": bool(self.drop)}


@dataclass(frozen=True)
class MechanismAudit:
    """One mechanism under audit.

    ``sample(n, rng, weakening)`` runs the project's mechanism code ``n`` times on each of the two
    neighbouring inputs and returns their outputs ``(out0, out1)``, each ``(n, k)``. ``discrete``:
    one integer column. ``dropped``/``scaled``: what a weakening drops or scales.
    ``pair_epsilon(weakening)``: the exact ε at ``claimed_delta`` of the pair the audit uses (the best
    any test can reach; NaN where unknown). ``dp``: whether the notion is differential privacy at all
    (P2B's crowd-blending is not).
    """

    name: str
    notion: str
    relation: str
    claimed_epsilon: float
    claimed_delta: float
    discrete: bool
    dropped: str
    weakened: Weakening
    sample: Sampler
    pair_epsilon: Callable[[Weakening], float]
    dp: bool = True
    note: str = ""
    scaled: str = "noise"
    """What ``Weakening.scale`` multiplies (the ε-greedy release: its exploration probability)."""
    settings: dict | None = None


def additive(exact: np.ndarray, noise: np.ndarray, weakening: Weakening, dropped: np.ndarray) -> np.ndarray:
    """``exact + scale · noise`` with the noise of the ``dropped`` columns removed when ``weakening.drop``.

    For Gaussian noise, scaling a draw is drawing at the scaled standard deviation.
    """
    noise = noise * weakening.scale
    if weakening.drop:
        noise[:, dropped] = 0.0
    return exact + noise


def no_pair_epsilon(weakening: Weakening) -> float:
    return math.nan
