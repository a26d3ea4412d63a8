"""The mutation suite: deliberately weakened copies of the learners and protocol parties, to prove the audit can fail.

Every class here is a copy of a learner or a protocol party weakened on purpose (noise dropped or scaled down,
clipping skipped, ε misused, the threshold dropped, composition ignored) for the end-to-end audits
(:mod:`~privbandits.audit.end_to_end`) to catch. None is a learner to use: each releases more than its ledger
says. Every mutant keeps its ledger (and metrics) saying what the unmodified code says, so only its released
outputs can give it away; it is caught when its audited lower bound on ε exceeds its own ledger's claim.

The mutants are injected at the learner and protocol level, never into the functions the audits call: each
audit takes the class it drives as a keyword (``learner=``, ``shuffler=``); FCLUB's local server, which the
driver builds itself, is patched into the driver for the audit's duration (:func:`injected`).

:data:`MUTANTS` names each one (``mutant.…``); :func:`mutant_unit` is a task function
(``privbandits.audit.mutants:mutant_unit``), so ``privbandits audit`` stores, reuses and reports each mutant as
one unit keyed by its complete spec (mutant, audit, options, samples, seed).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from privbandits.audit import end_to_end
from privbandits.audit.base import MechanismAudit
from privbandits.audit.stats import AuditBound, audit_samples
from privbandits.privacy.bounds import DataBounds
from privbandits.privacy.factorization import SqrtFactorization
from privbandits.privacy.noise import NOISE_SAMPLER
from privbandits.privacy.tree_mechanism import TreeMechanism
from privbandits.protocols.dp import JointDPLinUCB, LocalDPLinUCB, ShuffleDPLinUCB
from privbandits.protocols.dp.local import LocalRandomizer, local_noise_std, report_noise
from privbandits.protocols.fclub.local_server import LocalServer
from privbandits.protocols.mpc_bandit import ExplorationStream, PlaintextEpsilonGreedy, PrivateEpsilonGreedy
from privbandits.protocols.p2b.core import Shuffler

FUNCTION = "privbandits.audit.mutants:mutant_unit"
PREFIX = "mutant."
"""Every mutant's name starts with this (``privbandits audit mutant.NAME`` audits one)."""


# -- clipping skipped --------------------------------------------------------------------------------------------------
class RewardUnclipped(DataBounds):
    """For the audit only: clips contexts, passes rewards through unclipped."""

    def apply(self, x, y):
        return super().apply(x, 0.0)[0], y


class ContextUnclipped(DataBounds):
    """For the audit only: clips rewards, passes contexts through unclipped."""

    def apply(self, x, y):
        return x, super().apply(x, y)[1]


class Unclipped(DataBounds):
    """For the audit only: clips nothing."""

    def apply(self, x, y):
        return x, y


def with_bounds(base: type, bounds: type[DataBounds]) -> type:
    """``base`` (a DP LinUCB learner) weakened to clip with ``bounds``; its ledger still records its ε."""

    class Weakened(base):  # type: ignore[misc, valid-type]
        __doc__ = f"For the audit only: {base.__name__} clipping with {bounds.__name__}."

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.bounds = bounds(True)

    return Weakened


# -- noise dropped or scaled down --------------------------------------------------------------------------------------
class JointWithoutTreeNoise(JointDPLinUCB):
    """For the audit only: releases its prefix sums exactly (no tree); its ledger still records the tree at ε."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tree = None


class JointTreeNoiseTenth(JointDPLinUCB):
    """For the audit only: the tree's nodes at σ/10; ``noise_std`` and the ledger say σ."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tree = TreeMechanism(self.dim + 1, self.noise_std / 10, self.rng)


class JointFactorizationNoiseTenth(JointDPLinUCB):
    """For the audit only: the square-root factorization's noise z at σ/10 (same grid); ``noise_std`` and the
    ledger say σ."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        weaker = dataclasses.replace(self.factorization_noise, std=self.noise_std / 10)
        self.factorization = SqrtFactorization(weaker, (self.dim + 1,) * 2, self.rng, symmetric=True)


class LocalTenEpsilon(LocalDPLinUCB):
    """For the audit only: randomises each report for 10ε; its ledger says ε."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        noise = report_noise(local_noise_std(10 * self.epsilon, self.delta, self.noise_calibration), self.dim)
        self.randomizer = LocalRandomizer(noise.std, self.rng, noise.grid)


class ShuffleNoiseTenth(ShuffleDPLinUCB):
    """For the audit only: the local randomiser at σ₀/10 while ``noise_std`` (its metric) and the ledger keep σ₀."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.randomizer = LocalRandomizer(self.calibration.noise_std / 10, self.rng, self.calibration.grid)


class FCLUBServerHundredth(LocalServer):
    """For the audit only: each privatizer's tree at σ/100; its ledger still says the config's ε."""

    def _new_trees(self, cluster, t_phase, single):
        super()._new_trees(cluster, t_phase, single)
        for name in ("async_tree", "phase_tree"):
            tree = getattr(cluster, name)
            if tree is not None:
                setattr(cluster, name, TreeMechanism(self.dim + 1, tree.std / 100, self.rng))


class FCLUBFactorizedHundredth(LocalServer):
    """For the audit only: each factorized privatizer's noise z at σ/100 (same grid); its σ and its ledger keep the
    config's."""

    def _privatizer(self, depth):
        privatizer = super()._privatizer(depth)
        weaker = dataclasses.replace(self.cal.factorization, std=privatizer.std / 100)
        privatizer.mechanism = SqrtFactorization(weaker, (self.dim + 1,) * 2, self.rng, symmetric=True)
        return privatizer


# -- ε misused, composition ignored, threshold dropped -----------------------------------------------------------------
def exploring_at(base: type, fraction: float) -> type:
    """``base`` (an ε-greedy learner) exploring with probability ε·fraction; its config (and ledger's η) keep ε."""

    class Weakened(base):  # type: ignore[misc, valid-type]
        __doc__ = f"For the audit only: {base.__name__} exploring at ε × {fraction:g}; its ledger keeps η(ε)."

        def __init__(self, config, **kwargs):
            super().__init__(config, **kwargs)
            seed = np.random.SeedSequence(int(self.exploration.rng.integers(2**62)))
            self.exploration = ExplorationStream(config.n_arms, config.epsilon * fraction, config.precision, seed)

    return Weakened


class MPCCompositionIgnored(PrivateEpsilonGreedy):
    """For the audit only: records η once for the whole run (its first opened action), not once per action."""

    def _opened(self, arm):
        if self.rounds == 0:
            return super()._opened(arm)
        return arm % self.config.n_arms


class ThresholdDropped(Shuffler):
    """For the audit only: releases crowds of one (threshold 1); its ledger's ε(p) is unchanged."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "threshold": 1})


# -- the registry ------------------------------------------------------------------------------------------------------
class Mutant(NamedTuple):
    """One mutant: the end-to-end audit that drives it, the class it injects, FCLUB's server to patch in."""

    audit: str
    """The name of the end-to-end audit (:data:`~privbandits.audit.end_to_end.AUDITS`) that drives it."""
    options: dict[str, Any]
    """The weakened class, as the keyword the audit takes (``learner=``, ``shuffler=``)."""
    server: type | None
    """FCLUB's local server class patched into the driver while it runs (:func:`injected`), or None."""
    weakened: str
    """What is weakened, in words."""


MUTANTS: dict[str, Mutant] = {
    "mutant.joint.tree_noise_dropped": Mutant(
        "e2e.dp_linucb.joint", {"learner": JointWithoutTreeNoise}, None, "joint: tree noise dropped"),
    "mutant.joint.tree_noise_tenth": Mutant(
        "e2e.dp_linucb.joint", {"learner": JointTreeNoiseTenth}, None, "joint: tree noise × 1/10"),
    "mutant.joint.reward_unclipped": Mutant(
        "e2e.dp_linucb.joint", {"learner": with_bounds(JointDPLinUCB, RewardUnclipped)}, None,
        "joint: reward clipping skipped"),
    "mutant.joint.context_unclipped": Mutant(
        "e2e.dp_linucb.joint", {"learner": with_bounds(JointDPLinUCB, ContextUnclipped)}, None,
        "joint: context clipping skipped"),
    "mutant.joint_mf.noise_tenth": Mutant(
        "e2e.dp_linucb.joint_mf", {"learner": JointFactorizationNoiseTenth}, None,
        "joint, factorization: noise × 1/10"),
    "mutant.local.ten_epsilon": Mutant(
        "e2e.dp_linucb.local", {"learner": LocalTenEpsilon}, None, "local: 10ε inside"),
    "mutant.local.unclipped": Mutant(
        "e2e.dp_linucb.local", {"learner": with_bounds(LocalDPLinUCB, Unclipped)}, None, "local: clipping skipped"),
    "mutant.shuffle.randomiser_tenth": Mutant(
        "e2e.dp_linucb.shuffle", {"learner": ShuffleNoiseTenth}, None, "shuffle: randomiser σ/10, metric σ"),
    "mutant.fclub.server_hundredth": Mutant(
        "e2e.fclub.local_server", {}, FCLUBServerHundredth, "fclub: local server σ/100, ledger ε"),
    "mutant.fclub_mf.server_hundredth": Mutant(
        "e2e.fclub.local_server_mf", {}, FCLUBFactorizedHundredth,
        "fclub, factorization: local server σ/100, ledger ε"),
    "mutant.mpc.exploring_tenth": Mutant(
        "e2e.mpc_bandit.learner", {"learner": exploring_at(PrivateEpsilonGreedy, 0.1)}, None,
        "mpc: exploring at ε/10, ledger η(ε)"),
    "mutant.mpc.composition_ignored": Mutant(
        "e2e.mpc_bandit.learner", {"learner": MPCCompositionIgnored}, None, "mpc: composition over actions ignored"),
    "mutant.mpc_twin.exploring_tenth": Mutant(
        "e2e.mpc_bandit.twin", {"learner": exploring_at(PlaintextEpsilonGreedy, 0.1)}, None,
        "mpc twin: exploring at ε/10"),
    "mutant.p2b.threshold_dropped": Mutant(
        "e2e.p2b.pipeline", {"shuffler": ThresholdDropped}, None, "p2b: shuffler releases crowds of 1"),
}  # fmt: skip
"""Every mutant by name (``mutant.`` then the learner or protocol, then what is weakened)."""

SAMPLES = {name: end_to_end.SAMPLES[mutant.audit] for name, mutant in MUTANTS.items()}
"""Samples per side at full size: its end-to-end audit's."""
QUICK_SAMPLES = {**{name: end_to_end.QUICK_SAMPLES[mutant.audit] for name, mutant in MUTANTS.items()},
                 "mutant.fclub.server_hundredth": 400, "mutant.fclub_mf.server_hundredth": 400}  # fmt: skip
"""Samples per side of ``privbandits audit --quick``: its end-to-end audit's, but FCLUB's servers at σ/100 take 400
(its claim composes two privatizers at δ = 0.1 each: at the audit's quick size its bound can fall below the claim,
depending on the seed)."""


@contextmanager
def injected(name: str) -> Iterator[None]:
    """Within: mutant ``name``'s FCLUB local server (if it has one) is the one FCLUB's driver builds; the driver's
    own is restored on leaving, also on error."""
    server = MUTANTS[name].server
    if server is None:
        yield
        return
    from privbandits.protocols.fclub import driver

    original = driver.LocalServer
    setattr(driver, "LocalServer", server)  # noqa: B010 (a module attribute, typed as the class it replaces)
    try:
        yield
    finally:
        setattr(driver, "LocalServer", original)  # noqa: B010


def audit_mutant(
    name: str, samples: int, seed: int = 0, options: dict[str, Any] | None = None
) -> tuple[MechanismAudit, AuditBound]:
    """Mutant ``name``'s audit (its end-to-end audit with ``options``, driving the mutant) and its lower bound from
    ``samples`` runs on each neighbouring input."""
    if name not in MUTANTS:
        raise ValueError(f"mutant must be one of {', '.join(map(repr, MUTANTS))}, got {name!r}")
    mutant = MUTANTS[name]
    with injected(name):
        audit = end_to_end.AUDITS[mutant.audit](**(options or {}), **mutant.options)
        out0, out1 = audit.sample(samples, np.random.default_rng(seed), audit.weakened)
    return audit, audit_samples(out0, out1, audit.claimed_delta, discrete=audit.discrete)


def caught(result: dict[str, Any]) -> bool:
    """Whether a mutant unit's lower bound exceeds its claim (a bound at or below the claim is NOT caught)."""
    return bool(result["epsilon_lower"] > result["claimed_epsilon"])


def mutant_unit(
    mutant: str, audit: str, options: dict, samples: int, seed: int, noise_sampler: str = NOISE_SAMPLER
) -> dict[str, Any]:
    """Run one mutant's audit: ``samples`` runs on each neighbouring input, then the held-out ε lower bound.

    ``audit`` (the end-to-end audit that drives it) and ``noise_sampler`` are in the unit's key so that a mutant
    moved to another audit, or audited under another sampler, is never shown as this one."""
    if noise_sampler != NOISE_SAMPLER:
        raise ValueError(f"noise_sampler must be {NOISE_SAMPLER!r} (this code's sampler), got {noise_sampler!r}")
    if mutant in MUTANTS and audit != MUTANTS[mutant].audit:
        raise ValueError(f"audit must be {MUTANTS[mutant].audit!r} (mutant {mutant!r}'s), got {audit!r}")
    start = time.perf_counter()
    built, bound = audit_mutant(mutant, samples, seed, options)
    result = {
        "mutant": mutant,
        "audit": audit,
        "weakened": MUTANTS[mutant].weakened,
        "options": options,
        "claimed_epsilon": built.claimed_epsilon,
        "claimed_delta": built.claimed_delta,
        "samples_per_side": samples,
        "seconds": time.perf_counter() - start,
        **bound.as_dict(),
    }
    return {**result, "caught": caught(result)}


def mutant_task_params(name: str, options: dict, samples: int, seed: int) -> dict[str, Any]:
    """The complete spec of mutant ``name``'s unit (its key)."""
    return {"mutant": name, "audit": MUTANTS[name].audit, "options": options, "samples": samples, "seed": seed,
            "noise_sampler": NOISE_SAMPLER}  # fmt: skip
