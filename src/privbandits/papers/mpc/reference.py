"""The MPC bandit paper's reported numbers (spec ``mpc-bandit.md`` §6.4)."""

from __future__ import annotations

PAPER_TABLE1 = {"add": (0, 11), "mul": (2, 380), "reciprocal": (30, 6_000), "argmax": ("O(|P| + log2|A|)", 34_000)}
"""Table 1 (|P| = 2, |A| = 100): operation -> (communication rounds, slow-down vs PyTorch)."""

PAPER_LEARNER_SLOWDOWN = 500
"""§6: the whole private learner is 'nearly 500x slower' than plaintext at |P| = 2, |A| = 10."""

PAPER_FIG7 = "1–2% early, below 0.75% after more examples, slight rise late"
"""Fig. 7: the membership-inference advantage during training."""

PAPER_REWARD_LEVEL = 0.85
"""The reward level of the private learner on MNIST (ε = 0.01, L = 20): Fig. 8's only surviving y-tick (spec §6.4);
the curves themselves are not in the text."""
