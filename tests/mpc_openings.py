"""A test helper: record what an engine's parties send in each opening."""

from __future__ import annotations

import numpy as np


def record_openings(engine) -> list[np.ndarray]:
    """From now on, every share array ``engine`` opens (all rows held, party axis 0) is appended, copied, to
    the list returned."""
    sent: list[np.ndarray] = []
    original = engine.channel.open

    def recording(shares, **kwargs):
        sent.append(shares.copy())
        return original(shares, **kwargs)

    engine.channel.open = recording
    return sent
