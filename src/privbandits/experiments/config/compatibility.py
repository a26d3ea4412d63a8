"""Which policy can run on which environment: one phrase saying why not, or None.

:func:`incompatibility` checks a policy's needs (a stream, users on local servers, a
population, one context per arm) against what the environment offers, then asks the
policy's kind (its ``environment_problem``: the MPC learners' contexts and rewards, P2B's
encoder and early / late split on the population).
"""

from __future__ import annotations

from typing import Any

from privbandits.experiments.registry import POLICY_KINDS, kind_of


def incompatibility(env: Any, policy: Any) -> str | None:
    """Why ``policy`` cannot run on ``env`` (one phrase; ``"FIELD: why"`` when one of its fields is the cause), or
    None when it can."""
    name = repr(env.kind)
    if policy.needs == "population":
        if not env.population:
            return (
                f"kind {policy.kind!r} is a population protocol and needs a population environment "
                f"(e.g. 'p2b_synthetic'), not {name}"
            )
        return policy.environment_problem(env)
    if env.population:
        population = " or ".join(repr(kind_of(model)) for model in POLICY_KINDS.models() if model.needs == "population")
        return f"environment {name} is a population (P2B); only kind {population} runs on it, not {policy.kind!r}"
    if policy.needs == "users" and not env.has_users:
        return (
            f"kind {policy.kind!r} serves users on local servers and needs an environment with users "
            f"('clustered_users' or 'pooled_users'), not {name}"
        )
    if policy.per_arm_only and not env.per_arm_contexts:
        return (
            f"kind {policy.kind!r} keeps one θ over one context per arm; environment {name} gives one context per round"
        )
    return policy.environment_problem(env)
