"""The data bounds a DP guarantee assumes, enforced: ‖x‖ ≤ 1 and |y| ≤ 1, with a count of what was clipped.

The DP LinUCB baselines (their papers' L = B = 1) and FCLUB's privatizer (sensitivity
:data:`~privbandits.privacy.tree_mechanism.REPLACE_SENSITIVITY` assumes ‖x‖ ≤ 1, |y| ≤ 1)
release statistics of bounded data only: a context is scaled into the unit ball and a
reward clipped to [−1, 1] before it enters them, and the counts are stored with the run.
"""

from __future__ import annotations

import math

import numpy as np

CONTEXT_BOUND = 1.0
"""‖x‖ ≤ 1: contexts are scaled into the unit ball before release (the papers' L = 1)."""
REWARD_BOUND = 1.0
"""|y| ≤ 1: rewards are clipped to [−1, 1] before release (the papers' B = 1)."""
ROUNDING = 1.0 + 1e-12
"""A context is scaled whenever ‖x‖ > 1 but counted as clipped only beyond this factor (float rounding of a
normalised vector gives ‖x‖ = 1 + 2e-16)."""


class DataBounds:
    """Clips ``(x, y)`` to ``‖x‖ ≤ 1, |y| ≤ 1`` when ``active`` (a private run), counting each clip.

    Attributes
    ----------
    clipped_contexts, clipped_rewards : int
        Observations whose context was scaled, whose reward was clipped.
    """

    def __init__(self, active: bool) -> None:
        self.active = bool(active)
        self.clipped_contexts = self.clipped_rewards = 0

    def apply(self, x: np.ndarray, y: float) -> tuple[np.ndarray, float]:
        """``(x, y)`` within the bounds (``x`` is never modified in place; unchanged when inactive)."""
        if not self.active:
            return x, y
        norm = math.sqrt(float(x @ x))
        if norm > CONTEXT_BOUND:
            x = x * (CONTEXT_BOUND / norm)
            self.clipped_contexts += norm > CONTEXT_BOUND * ROUNDING  # a unit vector's rounding is not counted
        if abs(y) > REWARD_BOUND:
            y = math.copysign(REWARD_BOUND, y)
            self.clipped_rewards += 1
        return x, y

    def metrics(self) -> dict[str, float]:
        """The counts a run stores: ``clipped_contexts`` and ``clipped_rewards``."""
        return {"clipped_contexts": float(self.clipped_contexts), "clipped_rewards": float(self.clipped_rewards)}
