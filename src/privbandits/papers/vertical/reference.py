"""What the vertical O3M paper (Cao, Liang et al., KDD 2023) reports, for the paper-versus-ours claims."""

from __future__ import annotations

FIG5_UCB_RATIO = "≤ ~2x"
"""Fig. 5(a): VFUCB costs at most about twice LinUCB."""

FIG5_TS_RATIO = "> 5x → ~1x"
"""Fig. 5(b): VFTS starts above 5x LinTS at small d and falls to about 1x as d grows."""

FIG5_GB_PER_STEP: dict[tuple[int, int], float] = {(1000, 1000): 0.04, (5000, 1000): 6.25}
"""Fig. 5(c): gigabytes sent per step at (d, K)."""

FIG6C_CRITEO = "+0.1, +0.1 (Criteo)"
"""Fig. 6(c): relative CTR gained from feature ratio 0.2 to 0.8, and from 0.8 to full, on Criteo."""

THEOREM_4_2 = "infinitely many preimages"
"""Theorem 4.2: a masked context has infinitely many preimages without the mask."""

ROTATION_HIDES = "protected"
"""§4.3 [V2]: the random rotation protects the data distribution."""
