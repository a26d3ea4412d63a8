"""Which policy can run on which environment: one phrase saying why not, or None.

:func:`incompatibility` checks a policy's needs (a stream, users on local servers, a
population) against what the environment offers; :func:`_p2b_problem` checks a P2B policy's
encoder and early / late split against the population.
"""

from __future__ import annotations

from typing import Any

from privbandits.experiments.config.policies import P2BPolicyConfig, PlaintextMPCEpsilonGreedyConfig


def incompatibility(env: Any, policy: Any) -> str | None:
    """Why ``policy`` cannot run on ``env`` (one phrase), or None when it can."""
    name = repr(env.kind)
    if policy.needs == "population":
        if not env.population:
            return (
                f"kind {policy.kind!r} is a population protocol and needs a population environment "
                f"(e.g. 'p2b_synthetic'), not {name}"
            )
        return None
    if env.population:
        return f"environment {name} is a population (P2B); only kind 'p2b' runs on it, not {policy.kind!r}"
    if policy.needs == "users" and not env.has_users:
        return (
            f"kind {policy.kind!r} serves users on local servers and needs an environment with users "
            f"('clustered_users' or 'pooled_users'), not {name}"
        )
    if getattr(policy, "per_arm_only", False) and not env.per_arm_contexts:
        return (
            f"kind {policy.kind!r} keeps one θ over one context per arm; environment {name} gives one context per round"
        )
    if isinstance(policy, PlaintextMPCEpsilonGreedyConfig):
        if env.per_arm_contexts:
            return (
                f"kind {policy.kind!r} keeps one model per arm on one context per round; "
                f"environment {name} gives one context per arm"
            )
        if env.replay:
            return (
                f"kind {policy.kind!r} learns from every round; replay needs learners that learn "
                "only from matched rounds"
            )
        if getattr(policy, "binary_rewards", False) and not env.binary_rewards:
            return f"binary_rewards is set but environment {name} has real-valued rewards; set binary_rewards = false"
    return None


def _p2b_problem(env: Any, policy: P2BPolicyConfig) -> str | None:
    """What makes a P2B policy unusable on a population (``field: why``), or None."""
    import math

    grid = math.comb(10**policy.precision + env.context_dim - 1, env.context_dim - 1)
    if policy.n_codes > grid:
        return (
            f"n_codes: must be <= the {grid} points of the simplex grid (d = {env.context_dim}, "
            f"q = {policy.precision}) (got {policy.n_codes})"
        )
    users = env.users
    early = int(policy.early_fraction * users)
    if not 1 <= early < users:
        return (
            f"early_fraction: leaves {early} early and {users - early} late users of {users}; "
            f"both must be >= 1 (got {policy.early_fraction})"
        )
    return None
