"""Differential privacy of an opened ε-greedy action (MPC paper Theorem 1, spec §4.3, §5).

Revealing only the action of an ε-greedy policy over |A| arms is η-DP with
η = log(|A|/ε): the greedy arm has probability 1 − ε + ε/|A| and every other arm
ε/|A|, whatever the scores. The paper states no composition over rounds (spec
A14); :func:`record_action` puts one entry per opened action in the ledger, whose
basic composition gives the naive T·η.
"""

from __future__ import annotations

import math

from privbandits.privacy.ledger import LedgerEntry, PrivacyLedger

MECHANISM = "mpc_bandit.action"
"""Ledger name of an action opened to the arm puller p′."""


def _check(n_arms: int, epsilon: float) -> None:
    if n_arms < 2:
        raise ValueError(f"n_arms must be >= 2, got {n_arms}")
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")


def action_privacy_loss(n_arms: int, epsilon: float) -> float:
    """η = log(|A|/ε) of Theorem 1 (natural log, spec A13); ∞ for ε = 0 (greedy, no DP)."""
    _check(n_arms, epsilon)
    return math.inf if epsilon == 0 else math.log(n_arms / epsilon)


def tight_privacy_loss(n_arms: int, epsilon: float) -> float:
    """η* = log(1 + |A|(1 − ε)/ε) ≤ log(|A|/ε): the exact worst log-ratio of the proof (spec §5)."""
    _check(n_arms, epsilon)
    return math.inf if epsilon == 0 else math.log1p(n_arms * (1.0 - epsilon) / epsilon)


def exploration_for_loss(n_arms: int, eta: float) -> float:
    """ε = |A|·e^(−η), the inverse of :func:`action_privacy_loss` (η ≥ log|A|; ∞ gives 0)."""
    if not eta >= math.log(n_arms):
        raise ValueError(f"eta must be >= log(n_arms) = {math.log(n_arms):.4f} (epsilon <= 1), got {eta}")
    return 0.0 if math.isinf(eta) else n_arms * math.exp(-eta)


def action_probabilities(n_arms: int, epsilon: float) -> tuple[float, float]:
    """(P(greedy arm), P(each other arm)) = (1 − ε + ε/|A|, ε/|A|) without ties (spec §4.3)."""
    _check(n_arms, epsilon)
    return 1.0 - epsilon + epsilon / n_arms, epsilon / n_arms


def record_action(ledger: PrivacyLedger, n_arms: int, epsilon: float, round_index: int) -> LedgerEntry:
    """Record one action opened to the puller: η of Theorem 1, δ = 0."""
    return ledger.record(
        LedgerEntry(
            MECHANISM,
            action_privacy_loss(n_arms, epsilon),
            0.0,
            "one opened action (any change of history or context)",
            {"round": round_index, "exploration": epsilon, "n_arms": n_arms},
        )
    )
