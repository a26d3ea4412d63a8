"""Options added after results were stored, and the store keys that hold each only while it is on.

Store-key compatibility is the experiments layer's concern, not the protocols' (issue 32): off, such an
option computes bit for bit what was computed before it existed, so a key that leaves it out keeps the
key of the results stored then; on, it is in the key. Light to import: the experiment config reads it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from privbandits.protocols.mpc_bandit.config import MPCBanditConfig

MPC_LATER_OPTIONS = (
    "overlap_reciprocal",
    "mask_factors",
    "allmax_lookup",
    "lookup_comparison",
    "goldschmidt",
    "dealt_exploration",
    "fused_input",
)
""":class:`~privbandits.protocols.mpc_bandit.MPCBanditConfig`'s boolean options added after results were stored."""

FCLUB_LATER_OPTIONS = ("ridge_in_recommendation_only", "carry_synchronized_copies", "continual_release")
""":class:`~privbandits.protocols.fclub.config.FCLUBConfig` options added after runs were stored (issue 29; issue 47's
continual release, off at the tree: :func:`fclub_later_off`)."""


def fclub_later_off(value: Any) -> bool:
    """Whether one of :data:`FCLUB_LATER_OPTIONS` is off: False, or the binary tree (the continual release before)."""
    return value is False or value == "tree"


FCLUB_STORED_NOISE = "squared_log"
"""FCLUBConfig's ``noise_variance`` before the analytic Gaussian became its default (issue 47): what a stored spec
of the ``paper`` preset that leaves the noise to the preset (None) ran at."""


def fclub_private(variant: str, private: bool | None) -> bool:
    """Whether an FCLUB run privatizes its uploads: ``private`` where set, else the variant's own (CDP-FCLUB-DC)."""
    return variant == "cdp-fclub-dc" if private is None else private


def fclub_named_noise(options: dict[str, Any], variant: str, preset: str) -> dict[str, Any]:
    """``options`` (FCLUBConfig fields over ``variant``'s ``preset``, as a config or deployment file writes them)
    with the default noise named where it changed: under the ``paper`` preset a private run that leaves
    ``noise_variance`` out gets ``"analytic"`` (issue 47), in its spec, so it never takes the key of a run stored at
    the paper's form. The ``reference`` preset names its own noise; a run that privatizes nothing draws none."""
    if preset != "paper" or "noise_variance" in options or not fclub_private(variant, options.get("private")):
        return options
    return {**options, "noise_variance": "analytic"}


def without_later(
    options: dict[str, Any], later: tuple[str, ...], is_off: Callable[[Any], bool] = lambda value: value is False
) -> dict[str, Any]:
    """``options`` less each of ``later`` that is off (``is False``, unless ``is_off`` says otherwise)."""
    return {name: value for name, value in options.items() if not (name in later and is_off(value))}


def mpc_store_params(config: MPCBanditConfig, *, twin: bool = False) -> dict[str, Any]:
    """The MPC learner's configuration as a results-store key: every field, except each of
    :data:`MPC_LATER_OPTIONS` while it is off. ``twin``: the key of the float64 twin, which does not truncate,
    so it leaves out ``truncation_rounding`` (and keeps the key it had before that field)."""
    params = without_later(asdict(config), MPC_LATER_OPTIONS, operator.not_)  # as before: any falsy value is off
    if twin:
        del params["truncation_rounding"]
    return params
