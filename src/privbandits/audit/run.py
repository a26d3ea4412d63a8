"""The registry of audited mechanisms, one audit unit, and its table and JSON/Markdown report.

:func:`audit_unit` is a task function (``privbandits.audit.run:audit_unit``): its parameters
(mechanism, options, samples per side, seed, weakening) are the unit's complete spec, so the
results store (:mod:`privbandits.experiments.audits`) keys, reuses and refuses stale results
as it does for every experiment. The mutation suite's units
(:func:`~privbandits.audit.mutants.mutant_unit`) are reported beside them, in a table of their own.
"""

from __future__ import annotations

import inspect
import json
import math
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from privbandits.audit import crowd, end_to_end, evaluation, greedy, local, mutants, tree
from privbandits.audit.base import MechanismAudit, Weakening
from privbandits.audit.stats import audit_samples
from privbandits.privacy.noise import NOISE_SAMPLER

FUNCTION = "privbandits.audit.run:audit_unit"

MECHANISMS: dict[str, Callable[..., MechanismAudit]] = {
    "mpc_bandit.action": greedy.action_release,
    "fclub.pvt": tree.fclub_privatizer,
    "dp_linucb.joint": tree.joint_linucb,
    "dp_linucb.local": local.local_report,
    "dp_linucb.shuffle": local.shuffle_batch,
    "p2b.crowd_blending": crowd.participation_threshold,
    "fclub.pvt@analytic": partial(tree.fclub_privatizer, noise_variance="analytic"),
    "dp_linucb.joint@analytic": partial(tree.joint_linucb, calibration="analytic"),
    "dp_linucb.local@analytic": partial(local.local_report, calibration="analytic"),
    "evaluation.dp_ips": partial(evaluation.estimator_release, "ips"),
    "evaluation.dp_snips": partial(evaluation.estimator_release, "snips"),
    "evaluation.dp_dr": partial(evaluation.estimator_release, "dr"),
    "evaluation.dp_ips@gaussian": partial(evaluation.estimator_release, "ips", delta=1e-5),
    "evaluation.dp_snips@gaussian": partial(evaluation.estimator_release, "snips", delta=1e-5),
    "evaluation.dp_dr@gaussian": partial(evaluation.estimator_release, "dr", delta=1e-5),
    **end_to_end.AUDITS,
}
"""Every mechanism the auditor knows, by ledger name (``@analytic``: the analytic Gaussian calibration of
:mod:`privbandits.privacy.calibration` instead of the paper's; ``e2e.``: the learners and protocols audited end to
end through their public API, :mod:`~privbandits.audit.end_to_end`), with its audit's default options."""

FULL_SAMPLES = {"dp_linucb.shuffle": 10_000, **end_to_end.SAMPLES, **mutants.SAMPLES}
"""Samples per side where the default (100,000) would take minutes (a shuffled batch is 100 reports; an end-to-end
sample is a run, a report, a batch or an action of the learner's own code; a mutant: its end-to-end audit's)."""
QUICK_SAMPLES = {"mpc_bandit.action": 6_000, "fclub.pvt": 20_000, "dp_linucb.joint": 20_000, "dp_linucb.local": 3_000,
                 "dp_linucb.shuffle": 40, "p2b.crowd_blending": 20_000, "fclub.pvt@analytic": 20_000,
                 "dp_linucb.joint@analytic": 100_000, "dp_linucb.local@analytic": 3_000,
                 **end_to_end.QUICK_SAMPLES, **mutants.QUICK_SAMPLES}  # fmt: skip
"""Samples per side of ``privbandits audit --quick``: every audit at a size that fits the CLI help's budget."""
DEFAULT_SAMPLES = 100_000
MOST_SAMPLES = 10
"""``privbandits audit --samples`` takes at most this many times a mechanism's default (memory and time)."""


def default_samples(name: str) -> int:
    """Samples per side of mechanism ``name``'s audit unless told otherwise."""
    return FULL_SAMPLES.get(name, DEFAULT_SAMPLES)


NOT_AUDITED = {
    "vertical.o3m": "not DP: orthogonal masks claim no ε; the attacks that apply (Gram leakage, "
    "known-plaintext mask recovery, subspace and ICA attacks) are in privbandits.privacy.leakage",
}


def audited(name: str) -> str:
    """The mechanism whose audit runs for ``name``: ``name`` itself, or a mutant's end-to-end audit."""
    return mutants.MUTANTS[name].audit if name in mutants.MUTANTS else name


def settable_options(name: str) -> dict[str, Any]:
    """The options ``privbandits audit -o KEY=VALUE`` may set on mechanism (or mutant) ``name``: its (audit's)
    factory's keywords with a number, text or boolean default (by name, with that default; a class the mutation
    suite injects is not)."""
    factory = MECHANISMS[audited(name)]
    bound = factory.keywords if isinstance(factory, partial) else {}
    target = factory.func if isinstance(factory, partial) else factory
    found = {}
    for key, parameter in inspect.signature(target).parameters.items():
        default = bound.get(key, parameter.default)
        if key not in bound and isinstance(default, bool | int | float | str):
            found[key] = default
    return found


def mechanism(name: str, options: dict[str, Any] | None = None) -> MechanismAudit:
    """The audit of mechanism ``name`` built with ``options`` (its factory's keywords)."""
    if name not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {', '.join(map(repr, MECHANISMS))}, got {name!r}")
    return MECHANISMS[name](**(options or {}))


def audit_unit(
    mechanism_name: str, options: dict, samples: int, seed: int, weakening: dict, noise_sampler: str = NOISE_SAMPLER
) -> dict[str, Any]:
    """Run one audit: ``samples`` runs on each neighbouring input, then the held-out ε lower bound.

    ``noise_sampler`` names the DP noise sampler and its calibration (:data:`~privbandits.privacy.noise.NOISE_SAMPLER`)
    in the unit's key, so an audit of an earlier sampler is never shown as this one's; only the current one runs."""
    if noise_sampler != NOISE_SAMPLER:
        raise ValueError(f"noise_sampler must be {NOISE_SAMPLER!r} (this code's sampler), got {noise_sampler!r}")
    audit = mechanism(mechanism_name, options)
    weak = Weakening(**weakening)
    start = time.perf_counter()
    out0, out1 = audit.sample(samples, np.random.default_rng(seed), weak)
    bound = audit_samples(out0, out1, audit.claimed_delta, discrete=audit.discrete)
    return {
        "mechanism": audit.name,
        "notion": audit.notion,
        "dp": audit.dp,
        "relation": audit.relation,
        "claimed_epsilon": audit.claimed_epsilon,
        "claimed_delta": audit.claimed_delta,
        "weakening": weak.describe(audit.dropped, audit.scaled),
        "pair_epsilon": audit.pair_epsilon(weak),
        "samples_per_side": samples,
        "seconds": time.perf_counter() - start,
        "note": audit.note,
        "settings": audit.settings or {},
        **bound.as_dict(),
    }


def mutated(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The mutants' units among ``results`` (:func:`~privbandits.audit.mutants.mutant_unit`'s)."""
    return [result for result in results if "mutant" in result]


def rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per mechanism: the calibrated audit beside its weakened copy, and the verdicts (mutants aside)."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        if "mutant" in result:
            continue
        by_name.setdefault(result["mechanism"], []).append(result)
    table = []
    for name, found in by_name.items():
        real, weak = found[0], (found[1] if len(found) > 1 else None)  # end to end: no weakened copy here
        claimed = real["claimed_epsilon"]
        table.append({
            "mechanism": name,
            "notion": real["notion"],
            "relation": real["relation"],
            "claimed_epsilon": claimed,
            "claimed_delta": real["claimed_delta"],
            "pair_epsilon": real["pair_epsilon"],
            "epsilon_lower": real["epsilon_lower"],
            "weakening": weak["weakening"] if weak else "— (mutation suite)",
            "weakened_epsilon_lower": weak["epsilon_lower"] if weak else math.nan,
            "samples_per_side": real["samples_per_side"],
            "seconds": real["seconds"] + (weak["seconds"] if weak else 0.0),
            "verdict": _verdict(real, weak),
            "passed": _passed(real, weak),
            "note": real["note"],
        })  # fmt: skip
    return table


def _passed(real: dict[str, Any], weak: dict[str, Any] | None) -> bool | None:
    """Both directions hold (None for a notion that is not DP; the claim alone without a weakened copy)."""
    if not real["dp"]:
        return None
    caught = weak is None or real["claimed_epsilon"] < weak["epsilon_lower"]
    return real["epsilon_lower"] <= real["claimed_epsilon"] and caught


def refuted(result: dict[str, Any]) -> bool:
    """Whether an audit unit as calibrated measured a lower bound above its DP claim (``privbandits audit`` exits 1)."""
    return "mutant" not in result and bool(result["dp"]) and result["weakening"] == "as calibrated" and \
        result["epsilon_lower"] > result["claimed_epsilon"]  # fmt: skip


def missed(result: dict[str, Any]) -> bool:
    """Whether a mutant's unit measured a lower bound at or below its claim: NOT caught (``privbandits audit`` exits
    1: an audit that cannot fail is a defect)."""
    return "mutant" in result and not mutants.caught(result)


def _verdict(real: dict[str, Any], weak: dict[str, Any] | None) -> str:
    claimed = real["claimed_epsilon"]
    if not real["dp"]:
        return "not DP: refuted at δ = 0" if real["epsilon_lower"] > claimed else "not DP (attack inconclusive)"
    held = "claim holds" if real["epsilon_lower"] <= claimed else "CLAIM REFUTED"
    if weak is None:
        return held
    caught = "weakened copy caught" if weak["epsilon_lower"] > claimed else "WEAKENED COPY MISSED"
    return f"{held}; {caught}"


def _number(value: float) -> str:
    return "∞" if math.isinf(value) else "—" if math.isnan(value) else f"{value:.3g}"


HEADER = ["mechanism", "notion", "claimed ε", "δ", "pair ε (exact)", "ε ≥ (95%)", "weakened copy",
          "weakened ε ≥", "samples/side", "seconds", "verdict"]  # fmt: skip


def cells(row: dict[str, Any]) -> list[str]:
    return [row["mechanism"], row["notion"], _number(row["claimed_epsilon"]), _number(row["claimed_delta"]),
            _number(row["pair_epsilon"]), _number(row["epsilon_lower"]), row["weakening"],
            _number(row["weakened_epsilon_lower"]), f"{row['samples_per_side']:,}", f"{row['seconds']:.1f}",
            row["verdict"]]  # fmt: skip


MUTANT_HEADER = ["mutant", "weakened", "audit", "claimed ε", "δ", "ε ≥ (95%)", "samples/side", "seconds", "verdict"]
MUTATION_NOTE = (
    "Each mutant is a copy of a learner or a protocol party weakened on purpose (privbandits.audit.mutants, never a "
    "learner to use), driven through the end-to-end audit named; its claimed ε is its own ledger's, which still says "
    "what the unmodified code's says. Caught: its lower bound exceeds its claim."
)


def mutant_cells(result: dict[str, Any]) -> list[str]:
    return [result["mutant"], result["weakened"], result["audit"], _number(result["claimed_epsilon"]),
            _number(result["claimed_delta"]), _number(result["epsilon_lower"]), f"{result['samples_per_side']:,}",
            f"{result['seconds']:.1f}", "caught" if mutants.caught(result) else "NOT caught"]  # fmt: skip


def markdown(table: list[dict[str, Any]], mutant_units: list[dict[str, Any]] | None = None) -> str:
    """The audit report as Markdown: the table, each neighbouring relation and note, the notions not audited, and
    the mutation suite's table (``mutant_units``, :func:`~privbandits.audit.mutants.mutant_unit` results)."""
    lines = ["# Empirical privacy audit", "",
             "ε ≥ is a one-sided 95% Clopper–Pearson lower bound on ε at the claimed δ from a threshold test "
             "chosen on one half of the samples and measured on the other. Pair ε is the exact ε of the "
             "neighbouring pair used (the best any test can reach).", "",
             "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]  # fmt: skip
    lines += ["| " + " | ".join(cells(row)) + " |" for row in table]
    lines += ["", "## Neighbouring relations and notes", ""]
    lines += [f"- **{r['mechanism']}**: {r['relation']}." + (f" {r['note']}." if r["note"] else "") for r in table]
    lines += ["", "## Not audited", ""] + [f"- **{name}**: {why}." for name, why in NOT_AUDITED.items()]
    if mutant_units:
        lines += ["", "## Mutation suite", "", MUTATION_NOTE, "", "| " + " | ".join(MUTANT_HEADER) + " |",
                  "|" + "---|" * len(MUTANT_HEADER)]  # fmt: skip
        lines += ["| " + " | ".join(mutant_cells(result)) + " |" for result in mutant_units]
    return "\n".join(lines) + "\n"


def write_report(results: list[dict[str, Any]], out: Path, tables: dict[str, Any] | None = None) -> list[Path]:
    """``audit.json`` (every unit, the mutants' apart, and the calibration ``tables``) and ``audit.md`` (the tables)
    under ``out``."""
    from privbandits.audit import calibrations

    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "audit.json", out / "audit.md"
    units = {"audits": [result for result in results if "mutant" not in result], "mutants": mutated(results)}
    json_path.write_text(json.dumps({**units, "calibration": tables}, indent=1, default=str) + "\n")
    md_path.write_text(
        markdown(rows(results), mutated(results)) + ("\n" + calibrations.markdown(tables) if tables else "")
    )
    return [json_path, md_path]
