"""Plaintext linear contextual bandits: the non-private references of every protocol.

ridge
    Ridge-regression sufficient statistics with Sherman–Morrison inverse updates.
policies
    LinUCB, LinTS and ε-greedy in the two layouts the papers use (per-round kernels: ``_kernels``, numba).
tiebreak
    Explicit, named tie-breaking for argmax over arm scores.
defaults
    Default numerical settings (light: configs import it).
population
    Disjoint LinUCB for a population of independent users, vectorised across users (P2B);
    ``batched`` is its former name, kept so that old imports go on working.

The exports load lazily (PEP 562), so importing a light submodule such as ``defaults`` imports
neither the learners nor numba.
"""

from __future__ import annotations

from privbandits._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "EpsilonGreedy": "privbandits.linear.policies",
        "Layout": "privbandits.linear.policies",
        "LinearBandit": "privbandits.linear.policies",
        "LinTS": "privbandits.linear.policies",
        "LinUCB": "privbandits.linear.policies",
        "Policy": "privbandits.linear.policies",
        "Sampler": "privbandits.linear.policies",
        "UniformRandom": "privbandits.linear.policies",
        "as_generator": "privbandits.linear.policies",
        "covariance_root": "privbandits.linear.policies",
        "RidgeStatistics": "privbandits.linear.ridge",
        "TieBreak": "privbandits.linear.tiebreak",
        "break_ties": "privbandits.linear.tiebreak",
        "tied_arms": "privbandits.linear.tiebreak",
    },
)
