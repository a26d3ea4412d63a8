"""Audit of P2B's pre-sampling + crowd-blending (spec ``p2b.md`` §3): not differential privacy.

The guarantee P2B cites (Gehrke et al. 2012) is (ε, δ) with ε of Eq. (2) and
δ = exp(−Ω l (1 − p)²) for an Ω the paper never gives, so no δ is claimed and the
notion is crowd-blending, not DP. The attack that applies: the target user shares its
code with exactly l − 1 others (D) or is absent (D′). Each user takes part with
probability p (the project's :func:`~privbandits.protocols.p2b.core.choose_reports`, vectorised
over every run's users); the shuffler releases the code's tuples only if at least l carry
it (the rule of :meth:`~privbandits.protocols.p2b.core.Shuffler.release_encoded`). Under D′ the
code is never released; under D it is released exactly when all l take part, with
probability p^l: an event that singles out the target's participation with no false
positive, so the pipeline is not (ε, δ)-DP for any ε at δ < p^l. The released output is
the code's released count. ``drop`` removes the pre-sampling (every user takes part, p = 1) while
the claim stays ε(p); dropping the threshold instead would leave this pair's best event unchanged.
"""

from __future__ import annotations

import numpy as np

from privbandits.audit.base import MechanismAudit, Weakening, no_pair_epsilon


def released_counts(n: int, crowd: int, threshold: int, participation: float, rng) -> np.ndarray:
    """The released count of one code held by ``crowd`` users, in ``n`` runs: its reports if ≥ threshold, else 0."""
    from privbandits.protocols.p2b.core import choose_reports

    users, _ = choose_reports(np.ones((n * crowd, 1)), participation, 0.0, rng)
    counts = np.bincount(users // crowd, minlength=n) if crowd else np.zeros(n, dtype=np.int64)
    return np.where(counts >= threshold, counts, 0)


def participation_threshold(participation: float = 0.5, threshold: int = 10) -> MechanismAudit:
    """P2B's shuffler at participation p and threshold l (P2BConfig's defaults)."""
    from privbandits.privacy import crowd_blending

    def sample(n: int, rng: np.random.Generator, weakening: Weakening) -> tuple[np.ndarray, np.ndarray]:
        rate = 1.0 if weakening.drop else participation
        present = released_counts(n, threshold, threshold, rate, rng)
        absent = released_counts(n, threshold - 1, threshold, rate, rng)
        return present[:, None], absent[:, None]

    return MechanismAudit(
        name="p2b.crowd_blending",
        notion="not DP: pre-sampling + crowd-blending (δ needs Ω, never given)",
        relation=f"one user added or removed: the target holds a code shared with {threshold - 1} others (l − 1)",
        claimed_epsilon=crowd_blending.epsilon(participation),
        claimed_delta=0.0,
        discrete=True,
        dropped="pre-sampling",
        weakened=Weakening(drop=True),
        sample=sample,
        pair_epsilon=no_pair_epsilon,
        dp=False,
        note=f"distinguishing event (code released) has probability p^l = {participation**threshold:.3g} under D "
        f"and 0 under D′: not (ε, δ)-DP for δ < p^l",
        settings={"participation": participation, "threshold": threshold,
                  "event_probability": participation**threshold, "delta_needed": participation**threshold},
    )  # fmt: skip
