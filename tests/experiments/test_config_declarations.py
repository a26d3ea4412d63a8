"""The experiment config and the deployment file take the protocols' options from their declarations (issue 32):
the deployment file from the classes, the experiment config (which must import light, without the protocols)
from a generated snapshot that must be current. Every such field agrees with the declaration, its bounds,
choices and default, or is a listed, deliberate difference (the choices' Literal types are written by hand)."""

from __future__ import annotations

import typing
from enum import Enum

import annotated_types
import pytest
from pydantic import Field

from privbandits.deploy.deployment_parts import ProtocolSection
from privbandits.deploy.mpc_bandit.section import MPCProtocol
from privbandits.deploy.p2b.section import P2BProtocol
from privbandits.deploy.vertical.section import VerticalProtocol
from privbandits.experiments.config.policies import (
    CLUBConfig,
    EpsilonGreedyConfig,
    FCLUBPolicyConfig,
    LinTSConfig,
    LinUCBConfig,
    MPCEpsilonGreedyConfig,
    P2BPolicyConfig,
    PlaintextMPCEpsilonGreedyConfig,
    SCLUBConfig,
    VerticalLinUCBConfig,
)
from privbandits.experiments.config_snapshot import TARGET, snapshot
from privbandits.linear.policies import EpsilonGreedy, LinTS, LinUCB
from privbandits.options import Option, _bounds_of, options_of
from privbandits.protocols.fclub.baselines import BaselineConfig
from privbandits.protocols.fclub.config import FCLUBConfig
from privbandits.protocols.mpc_bandit import MPCBanditConfig
from privbandits.protocols.p2b.core import P2BConfig
from privbandits.protocols.vertical.core import VerticalFederatedBandit
from privbandits.validation import Choice

PAIRS = [
    (LinUCBConfig, LinUCB),
    (LinTSConfig, LinTS),
    (EpsilonGreedyConfig, EpsilonGreedy),
    (VerticalLinUCBConfig, LinUCB),
    (VerticalLinUCBConfig, VerticalFederatedBandit),
    (PlaintextMPCEpsilonGreedyConfig, MPCBanditConfig),
    (MPCEpsilonGreedyConfig, MPCBanditConfig),
    (P2BPolicyConfig, P2BConfig),
    (FCLUBPolicyConfig, FCLUBConfig),
    (CLUBConfig, BaselineConfig),
    (SCLUBConfig, BaselineConfig),
    (MPCProtocol, MPCBanditConfig),
    (P2BProtocol, P2BConfig),
    (VerticalProtocol, VerticalFederatedBandit),
    (VerticalProtocol, LinUCB),
    (VerticalProtocol, LinTS),
]
"""Each model that repeats options, and the class that declares them."""

DIFFERENCES = {
    ("LinUCBConfig", "tie_tolerance"): "bounds",
    ("LinTSConfig", "tie_tolerance"): "bounds",
    ("EpsilonGreedyConfig", "tie_tolerance"): "bounds",
    ("VerticalLinUCBConfig", "tie_tolerance"): "bounds",
    ("MPCEpsilonGreedyConfig", "nr_iterations"): "bounds",
    ("VerticalProtocol", "alpha"): "default",
    ("VerticalLinUCBConfig", "layout"): "choices",
    ("MPCProtocol", "n_arms"): "default",
}
"""Deliberate or known differences: the experiment config refuses a tie tolerance above 1 and more than 50
Newton–Raphson iterations, which the learners accept (issue 32's "drift": left as they are, since they change
which configs run); a deployment's VFUCB β is the paper's 0.5 and its n_arms required; the vertical protocols
take the shared layout only. Partitions are lists there, checked by validators of their own. A deployment section
may also cap a size the protocol takes unbounded (``deploy/deployment_parts.py``'s ``MOST_*``: its parties hold
their data in memory)."""


def _field_bounds(info) -> dict[str, float]:
    names = {annotated_types.Ge: "ge", annotated_types.Gt: "gt", annotated_types.Le: "le", annotated_types.Lt: "lt"}
    names |= {annotated_types.MinLen: "min_length"}
    bounds = {}
    for item in info.metadata:
        for kind, name in names.items():
            if isinstance(item, kind):
                bounds[name] = getattr(item, name)
    return bounds


def _literals(annotation) -> set[object] | None:
    if typing.get_origin(annotation) is typing.Literal:
        return set(typing.get_args(annotation))
    for arg in typing.get_args(annotation):
        found = _literals(arg)
        if found is not None:
            return found
    return None


def _choices(declared: Option) -> set[object] | None:
    constraint = getattr(declared.constraint, "inner", declared.constraint)
    if not isinstance(constraint, Choice):
        return None
    options = constraint.options
    return {m.value for m in options} if isinstance(options, type) and issubclass(options, Enum) else set(options)


def _plain(value: object) -> object:
    return value.value if isinstance(value, Enum) else value


def _disagreements(model, declarer) -> list[str]:
    declared = options_of(declarer)
    problems = []
    for name, info in model.model_fields.items():
        if name not in declared or name in ("kind", "partition"):  # a kind tag; lists with their own validators
            continue
        option, allowed = declared[name], DIFFERENCES.get((model.__name__, name))
        bounds, expected = _field_bounds(info), {k: float(v) for k, v in _bounds_of(option.constraint).items()}
        if issubclass(model, ProtocolSection) and "le" not in expected:  # a deployment's memory cap (MOST_*)
            bounds.pop("le", None)
        if allowed != "bounds" and {k: float(v) for k, v in bounds.items()} != expected:
            problems.append(f"{model.__name__}.{name}: bounds {bounds}, declared {expected}")
        literals = _literals(info.annotation)
        if allowed != "choices" and literals is not None and literals != _choices(option):
            problems.append(f"{model.__name__}.{name}: choices {literals}, declared {_choices(option)}")
        preset = model is FCLUBPolicyConfig  # None: the variant's preset decides
        default = None if info.is_required() else _plain(info.default)
        if allowed != "default" and not preset and default != _plain(option.default if not option.required else None):
            problems.append(f"{model.__name__}.{name}: default {default!r}, declared {option.default!r}")
    return problems


def test_the_experiment_configs_snapshot_is_what_the_declarations_write():
    assert TARGET.read_text(encoding="utf-8") == snapshot(), "stale privbandits/declared.py: run `make declarations`"


@pytest.mark.parametrize(("model", "declarer"), PAIRS, ids=[model.__name__ for model, _ in PAIRS])
def test_a_repeated_option_agrees_with_its_declaration(model, declarer):
    assert _disagreements(model, declarer) == []


def test_the_check_finds_a_drift():
    class Drifted(LinUCBConfig):
        alpha: float = Field(2.0, ge=0)
        reg: float = Field(1.0, ge=0)

    problems = _disagreements(Drifted, LinUCB)
    assert "Drifted.alpha: default 2.0, declared 1.0" in problems
    assert "Drifted.reg: bounds {'ge': 0}, declared {'gt': 0.0}" in problems


def test_every_listed_difference_is_still_one():
    """A difference that has gone away leaves the list."""
    for (model_name, name), what in list(DIFFERENCES.items()):
        pairs = [(m, d) for m, d in PAIRS if m.__name__ == model_name]
        kept = DIFFERENCES.pop((model_name, name))
        try:
            problems = [p for model, declarer in pairs for p in _disagreements(model, declarer)]
            assert any(p.startswith(f"{model_name}.{name}: {what}") for p in problems), (model_name, name)
        finally:
            DIFFERENCES[(model_name, name)] = kept


def test_show_prints_a_kinds_options_with_the_declared_descriptions(monkeypatch):
    from typer.testing import CliRunner

    from privbandits import cli
    from privbandits.cli import app

    monkeypatch.setattr(cli.console, "_width", 250)  # one line a row (and the width it had after the test)
    result = CliRunner().invoke(app, ["show", "mpc_epsilon_greedy"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "nr_iterations" in line)
    assert "7" in row and options_of(MPCBanditConfig)["nr_iterations"].doc in row
    unknown = CliRunner().invoke(app, ["show", "no_such_kind"])
    assert unknown.exit_code == 2 and "no config file or reproduction named 'no_such_kind'" in unknown.output
