"""Audit of the MPC learner's opened ε-greedy action (MPC paper Theorem 1; spec ``mpc-bandit.md`` §4.3).

Neighbouring inputs: any change of history or context; the worst one moves the greedy arm,
so D has arm 0 best and D′ arm 1 best (every other score equal). Each run draws the round's
exploration samples from the dealer's :class:`~privbandits.protocols.mpc_bandit.ExplorationStream`
and computes the action with the learner's own secret-shared :func:`private_choice` (batched over
runs), or its float twin :func:`plaintext_choice` (``backend="plaintext"``, the same arms on the
same draws). The released output is the arm. Claimed: η = log(|A|/ε) per opened action, δ = 0.
The weakened copy explores with probability ε·scale while still claiming η(ε).
"""

from __future__ import annotations

import numpy as np

from privbandits.audit.base import MechanismAudit, Weakening
from privbandits.privacy import epsilon_greedy

PRECISION = 20
CHUNK = 20_000


def _scores(n_arms: int, best: int) -> np.ndarray:
    scores = np.zeros(n_arms)
    scores[best] = 0.5
    return scores


def _draws(n: int, n_arms: int, exploration: float, rng: np.random.Generator):
    from privbandits.protocols.mpc_bandit import ExplorationStream

    stream = ExplorationStream(n_arms, exploration, PRECISION, np.random.SeedSequence(rng.integers(2**63)))
    draws = [stream.draw() for _ in range(n)]
    coin = np.array([d.coin for d in draws], dtype=np.uint64)
    return coin, np.stack([d.uniforms for d in draws]), np.stack([d.permutation for d in draws])


def _private_arms(scores: np.ndarray, coin, uniforms, gamma, seed: int) -> np.ndarray:
    from privbandits.mpc.engine import Engine
    from privbandits.protocols.mpc_bandit import private_choice

    arms = []
    for start in range(0, len(coin), CHUNK):
        rows = slice(start, start + CHUNK)
        engine = Engine(2, precision=PRECISION, seed=seed + start)
        with engine.phase("audit"):
            shared_scores = engine.input(np.broadcast_to(scores, uniforms[rows].shape))
            shared = [
                engine.dealer.deal("draw", words, scale)
                for words, scale in ((coin[rows], 0), (uniforms[rows], PRECISION), (gamma[rows], 0))
            ]
            arms.append(engine.open(private_choice(engine, shared_scores, *shared)).argmax(axis=1))
    return np.concatenate(arms)


def action_release(n_arms: int = 10, exploration: float = 0.1, backend: str = "mpc") -> MechanismAudit:
    """The audit of one opened action of the MPC ε-greedy learner with ``n_arms`` arms and exploration ε."""
    if backend not in ("mpc", "plaintext"):
        raise ValueError(f"backend must be 'mpc' or 'plaintext', got {backend!r}")

    def sample(n: int, rng: np.random.Generator, weakening: Weakening) -> tuple[np.ndarray, np.ndarray]:
        from privbandits.protocols.mpc_bandit import plaintext_choice

        rate = 0.0 if weakening.drop else exploration * weakening.scale
        outputs = []
        for best in (0, 1):
            coin, uniforms, gamma = _draws(n, n_arms, rate, rng)
            scores = _scores(n_arms, best)
            if backend == "mpc":
                arms = _private_arms(scores, coin, uniforms, gamma, int(rng.integers(2**31)))
            else:
                arms = plaintext_choice(scores, coin, uniforms / 2.0**PRECISION, gamma)
            outputs.append(np.asarray(arms, dtype=np.int64)[:, None])
        return outputs[0], outputs[1]

    return MechanismAudit(
        name="mpc_bandit.action",
        notion="ε-DP per opened action (η of Theorem 1; T actions compose to T·η)",
        relation="any change of history or context: the greedy arm moves from arm 0 to arm 1",
        claimed_epsilon=epsilon_greedy.action_privacy_loss(n_arms, exploration),
        claimed_delta=0.0,
        discrete=True,
        dropped="exploration",
        scaled="exploration",
        weakened=Weakening(scale=0.5),
        sample=sample,
        pair_epsilon=lambda w: epsilon_greedy.tight_privacy_loss(n_arms, 0.0 if w.drop else exploration * w.scale),
        settings={"n_arms": n_arms, "exploration": exploration, "backend": backend},
    )
