"""Membership inference against a bandit checkpoint (Yeom et al. 2018; spec ``mpc-bandit.md`` §6.5, A10).

Both metrics evaluate a decrypted checkpoint (W^{-1}, b) with the learner's
ε-greedy rule (scores w_a^⊤x with w_a = W_a^{-1} b_a, replaced by uniforms with
probability ε, ties broken at random) and no updates, on members (training
examples seen so far) and non-members (the held-out set):

``per_arm_advantage`` (the paper's rule)
    From one evaluation pass, estimate p_train(r|a) on the members and p_test(r|a)
    on the non-members (Laplace-smoothed). A second pass with fresh exploration
    queries equally many members and non-members; the adversary says "member" iff
    p_train(r|a) > p_test(r|a) for the observed (a, r). Advantage = TPR − FPR.
``reward_gap_advantage`` (the reference code's metric)
    |mean reward on members − mean reward on non-members| of one pass.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Outcomes(NamedTuple):
    """Arms chosen and rewards received by a checkpoint on a set of examples."""

    arms: np.ndarray
    rewards: np.ndarray


def evaluate(
    inverse: np.ndarray,
    b: np.ndarray,
    contexts: np.ndarray,
    rewards: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
) -> Outcomes:
    """The checkpoint's ε-greedy arms on ``contexts`` (n, D) and their rewards from ``rewards`` (n, |A|)."""
    weights = np.einsum("ad,ade->ae", b, inverse)
    scores = contexts @ weights.T
    explore = rng.random(len(contexts)) < epsilon
    scores[explore] = rng.random((int(explore.sum()), scores.shape[1]))
    tied = scores >= scores.max(axis=1, keepdims=True)
    arms = np.argmax(np.where(tied, rng.random(scores.shape), -1.0), axis=1)
    return Outcomes(arms, rewards[np.arange(len(arms)), arms])


def reward_gap_advantage(members: Outcomes, nonmembers: Outcomes) -> float:
    """|mean member reward − mean non-member reward| (the reference code's advantage)."""
    return abs(float(members.rewards.mean()) - float(nonmembers.rewards.mean()))


def _reward_rates(outcomes: Outcomes, n_arms: int) -> np.ndarray:
    """Laplace-smoothed p(r = 1 | a) per arm."""
    pulls = np.bincount(outcomes.arms, minlength=n_arms)
    wins = np.bincount(outcomes.arms, weights=outcomes.rewards, minlength=n_arms)
    return (wins + 1.0) / (pulls + 2.0)


def per_arm_advantage(
    estimate_members: Outcomes,
    estimate_nonmembers: Outcomes,
    query_members: Outcomes,
    query_nonmembers: Outcomes,
    n_arms: int,
) -> float:
    """TPR − FPR of "member iff p_train(r|a) > p_test(r|a)" (the paper's rule, binary rewards)."""
    train, test = _reward_rates(estimate_members, n_arms), _reward_rates(estimate_nonmembers, n_arms)

    def says_member(query: Outcomes) -> np.ndarray:
        win = query.rewards > 0.5
        p_train = np.where(win, train[query.arms], 1.0 - train[query.arms])
        p_test = np.where(win, test[query.arms], 1.0 - test[query.arms])
        return p_train > p_test

    return float(says_member(query_members).mean() - says_member(query_nonmembers).mean())


class Advantages(NamedTuple):
    per_arm: float
    reward_gap: float


def membership_advantages(
    inverse: np.ndarray,
    b: np.ndarray,
    members: tuple[np.ndarray, np.ndarray],
    nonmembers: tuple[np.ndarray, np.ndarray],
    epsilon: float,
    rng: np.random.Generator,
) -> Advantages:
    """Both advantages of checkpoint (W^{-1}, b); ``members`` and ``nonmembers`` are (contexts, rewards (n, |A|))."""
    if len(members[0]) == 0 or len(nonmembers[0]) == 0:
        raise ValueError("membership inference needs at least one member and one non-member")
    seen = evaluate(inverse, b, *members, epsilon, rng)
    held = evaluate(inverse, b, *nonmembers, epsilon, rng)
    n = min(len(members[0]), len(nonmembers[0]))
    pick_m, pick_n = rng.choice(len(members[0]), n, replace=False), rng.choice(len(nonmembers[0]), n, replace=False)
    query_m = evaluate(inverse, b, members[0][pick_m], members[1][pick_m], epsilon, rng)
    query_n = evaluate(inverse, b, nonmembers[0][pick_n], nonmembers[1][pick_n], epsilon, rng)
    per_arm = per_arm_advantage(seen, held, query_m, query_n, len(inverse))
    return Advantages(per_arm, reward_gap_advantage(seen, held))
