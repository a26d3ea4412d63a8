"""The reference code beside the reference-compatible preset, on the reference's own 40 users (issue 15).

The reference code (``ZhaoHaoRu/Federated-Clustering-of-Bandits``) was run unchanged, ten seeds
(``np.random.seed(s)``), and its per-seed regret and communication are recorded in
:data:`~privbandits.papers.fclub.reference.REFERENCE_CODE_RUNS` (rerun them with
``benchmarks/fclub_reference_gap.py``). Our runs are units of the store: the preset, and each reference
behaviour switched off (the ablation), on the same users (``raw_data/synthetic_data/10_theta.npy`` of a
checkout of the reference code, which the project does not ship). The report compares medians with a
two-sided Mann–Whitney test and says which behaviour closes the gap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import mannwhitneyu

from privbandits.experiments.paper import Claim, PaperReport
from privbandits.experiments.tasks import Task
from privbandits.papers.fclub.options import GapOptions
from privbandits.papers.fclub.reference import REFERENCE_CODE_RUNS, REFERENCE_CODE_SOURCE
from privbandits.papers.fclub.runs import Setting, run_task, with_data

PRESET = "preset"
_DC: dict[str, tuple[dict[str, Any], str]] = {
    PRESET: ({}, "(a) + (b): the preset"),
    "neither": ({"shared_statistics_defect": False, "merge_rule": "components"}, "neither (a) nor (b)"),
    "a": ({"merge_rule": "components"}, "(a) only: the double count"),
    "b": ({"shared_statistics_defect": False}, "(b) only: the reference merge rule"),
    "a+b+7.3": ({"rebuild_local_copies": True}, "(a) + (b) + rebuilt local copies (spec §7.3)"),
}
ABLATIONS: dict[str, dict[str, tuple[dict[str, Any], str]]] = {
    "FCLUB-DC": _DC,
    "CDP-FCLUB-DC": _DC,
    "FCLUB": {
        PRESET: ({}, "per-round detection (§7.6) + the reference merge: the preset"),
        "neither": (
            {"detect_every_round": False, "merge_rule": "components"},
            "phase detection, components of Eq. 4 (before issue 15)",
        ),
        "merge": ({"detect_every_round": False}, "the reference merge only (greedy, never the last local cluster)"),
        "per-round": ({"merge_rule": "components"}, "per-round detection only"),
    },
    "Homo-DC": {
        PRESET: ({}, "never merges, renews every phase, (a), (c) and (d): the preset"),
        "neither": (
            {
                "merge_rule": "components",
                "renew_every_phase": False,
                "shared_statistics_defect": False,
                "ridge_in_recommendation_only": False,
                "carry_synchronized_copies": False,
            },
            "one global cluster (the spec's Homo-DC)",
        ),
        "b": ({"shared_statistics_defect": False}, "never merges, renews every phase, (c) and (d), without (a)"),
        "issue-15": (
            {"ridge_in_recommendation_only": False, "carry_synchronized_copies": False},
            "never merges, renews every phase, (a): the issue-15 preset",
        ),
        "c": ({"carry_synchronized_copies": False}, "never merges, renews every phase, (a) and (c), without (d)"),
        "d": ({"ridge_in_recommendation_only": False}, "never merges, renews every phase, (a) and (d), without (c)"),
    },
}
"""Per algorithm: ablation name → (overrides of the reference-compatible preset, description)."""

_PREFIX = "gap|"


def setting(options: GapOptions) -> Setting | None:
    """The reference's own 40 synthetic users, if the reference checkout is there."""
    return with_data(Setting(kind="reference-synthetic"), options.reference_dir) if options.reference_dir else None


def _ablations(options: GapOptions, name: str) -> dict[str, tuple[dict[str, Any], str]]:
    table = ABLATIONS[name]
    return table if options.ablation else {PRESET: table[PRESET]}


def _label(name: str, ablation: str) -> str:
    return f"{_PREFIX}{ablation}|"


def tasks(options: GapOptions) -> list[Task]:
    """Every algorithm × ablation × seed on the reference's users (none without a reference checkout)."""
    where = setting(options)
    if where is None:
        return []
    return [
        run_task(name, where, options.horizon, seed, _label(name, ablation), overrides)
        for name in options.algorithms
        for ablation, (overrides, _) in _ablations(options, name).items()
        for seed in range(options.seeds)
    ]


def _runs(options: GapOptions, points: dict[str, dict], where: Setting, name: str, ablation: str) -> list[dict]:
    overrides = ABLATIONS[name][ablation][0]
    labels = [run_task(name, where, options.horizon, s, _label(name, ablation), overrides).label
              for s in range(options.seeds)]  # fmt: skip
    return [points[label] for label in labels]


def _test(ours: list[float], theirs: list[float]) -> float:
    """Two-sided Mann–Whitney p of ours against the reference code's seeds."""
    return float(mannwhitneyu(ours, theirs, alternative="two-sided").pvalue)


def report(options: GapOptions, points: dict[str, dict], out: Path) -> PaperReport:
    T, seeds = options.horizon, options.seeds
    report = PaperReport("fclub-reference-gap", f"FCLUB: the reference code beside the reference-compatible "
                         f"preset on its own 40 users (T = {T:,}, {seeds} seeds)")  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    where = setting(options)
    report.notes.append(REFERENCE_CODE_SOURCE)
    if where is None:
        report.notes.insert(
            0,
            "SKIPPED: needs -o reference_dir=<a checkout of the reference code> (its "
            "raw_data/synthetic_data/10_theta.npy: 4 θ's × 10 users, not shipped by the project).",
        )
        return report
    measured = T == REFERENCE_CODE_RUNS["horizon"]
    if not measured:
        report.notes.insert(
            0,
            f"The reference code's runs are recorded at T = {REFERENCE_CODE_RUNS['horizon']:,}; "
            f"at T = {T:,} only our numbers are shown (rerun benchmarks/fclub_reference_gap.py).",
        )
    main = [["algorithm", "reference code: median (seeds)", "ours, preset: median (seeds)",
             "Mann–Whitney p (two-sided)", "inside the reference's spread"]]  # fmt: skip
    ablation = [["algorithm", "options", "ours: median regret", "p vs reference", "reference-way communication"]]
    comm = [["algorithm", "reference code's count (median)", "ours, the reference's way (median)",
             "ours, paper's C(T) (median)", "ours by kind (medians)"]]  # fmt: skip
    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    closing: dict[str, dict[str, tuple[str, float]]] = {}
    for row, name in enumerate(options.algorithms):
        theirs = REFERENCE_CODE_RUNS["regret"].get(name, []) if measured else []
        finals = {}
        for key, (_, described) in _ablations(options, name).items():
            runs = _runs(options, points, where, name, key)
            finals[key] = [run["regret"][-1] for run in runs]
            p = _test(finals[key], theirs) if len(theirs) > 1 else float("nan")
            reference_way = np.median([run["reference_communication"] for run in runs])
            ablation.append([name, described, f"{np.median(finals[key]):,.0f}", _p(p), f"{reference_way:,.0f}"])
            closing.setdefault(name, {})[key] = (described, p)
            if key == PRESET:
                comm.append(_comm_row(name, runs, REFERENCE_CODE_RUNS["communication"].get(name, []) if measured
                                      else []))  # fmt: skip
        ours = finals[PRESET]
        ax.scatter(ours, [row + 0.1] * len(ours), color="C0", label="ours (preset)" if row == 0 else None)
        if theirs:
            ax.scatter(theirs, [row - 0.1] * len(theirs), color="C3", marker="x",
                       label="reference code" if row == 0 else None)  # fmt: skip
            p = _test(ours, theirs)
            main.append([name, f"{np.median(theirs):,.0f} ({', '.join(f'{v:,.0f}' for v in theirs)})",
                         f"{np.median(ours):,.0f} ({', '.join(f'{v:,.0f}' for v in ours)})", _p(p),
                         "yes" if p > 0.05 else "NO"])  # fmt: skip
            if name in ("FCLUB-DC", "FCLUB", "CDP-FCLUB-DC", "Homo-DC"):
                report.claims.append(Claim(
                    f"reference's 40 users, {name}", "the reference-compatible preset is inside the reference "
                    "code's spread (two-sided Mann–Whitney p > 0.05 over the seeds)",
                    f"median {np.median(theirs):,.0f}", f"median {np.median(ours):,.0f}, p = {_p(p)}",
                    "reproduced" if p > 0.05 else "not reproduced",
                ))  # fmt: skip
        else:
            main.append([name, "not recorded", f"{np.median(ours):,.0f}", "–", "–"])
    report.tables["Final regret: the reference code vs the reference-compatible preset"] = main
    report.tables["Ablation: each reference behaviour on and off (our runs)"] = ablation
    report.tables["Communication: the reference code's count and ours"] = comm
    report.notes[:0] = [_closing_note(closing, options)] + _NOTES
    ax.set(yticks=range(len(options.algorithms)), yticklabels=list(options.algorithms), xlabel=f"regret at T = {T:,}",
           title="per-seed final regret: reference code (x) vs ours (o)")  # fmt: skip
    ax.grid(True, alpha=0.3)
    ax.legend()
    report.add_figure(fig, out / "fclub-reference-gap.png")
    return report


def _p(p: float) -> str:
    return "–" if p != p else f"{p:.3g}"


def _comm_row(name: str, runs: list[dict], theirs: list[int]) -> list[str]:
    kinds = [run.get("communication_kinds") or {} for run in runs]
    parts = ("phase_uploads", "renewals", "uploads", "downloads", "shared_updates", "idle_downloads", "changed_phases")
    by_kind = ", ".join(f"{k} {np.median([kind.get(k, 0) for kind in kinds]):,.0f}" for k in parts)
    return [name, f"{np.median(theirs):,.0f}" if theirs else "not recorded",
            f"{np.median([run['reference_communication'] for run in runs]):,.0f}",
            f"{np.median([run['communication'][-1] for run in runs]):,.0f}", by_kind]  # fmt: skip


def _closing_note(closing: dict[str, dict[str, tuple[str, float]]], options: GapOptions) -> str:
    """Per algorithm, from the stored ablation rows: is the run without the reference behaviours ('neither')
    outside the reference's spread, and which single behaviour brings it inside (p > 0.05)."""
    if not options.ablation:
        return "Ablation not run (-o ablation=false): which behaviour closes the gap is not measured here."
    verdicts = []
    for name, rows in closing.items():
        p_before = rows["neither"][1]
        if p_before != p_before:
            continue
        if p_before > 0.05:
            verdicts.append(f"{name}: already inside without them (p = {_p(p_before)})")
            continue
        single = [f"{described} (p = {_p(p)})" for key, (described, p) in rows.items()
                  if key not in (PRESET, "neither") and p > 0.05]  # fmt: skip
        preset = rows[PRESET][1]
        closed = "; closed by " + ", ".join(single) if single else (
            f"; no single behaviour closes it, together (the preset) they do (p = {_p(preset)})" if preset > 0.05
            else f"; NOT closed (preset p = {_p(preset)})")  # fmt: skip
        verdicts.append(f"{name}: outside without them (p = {_p(p_before)}){closed}")
    found = ". ".join(verdicts) or "not measured (no recorded reference runs at this horizon)"
    return f"WHICH OPTION CLOSES THE GAP (stored ablation rows against the reference code's seeds): {found}."


_NOTES = [
    "Homo-DC (issue 29): the reference code's DC_homogenenous_version.py, run beside ours with both instrumented "
    "(uploads, each server's synchronized count, the samples its phase starts drop), differs from the issue-15 "
    "preset (~900 against ~1,050) in two behaviours that only act together. (c) ridge_in_recommendation_only: its "
    "synchronized S holds no ridge (the 2I enters only the recommendation), so Eq. 5 is np.linalg.det(S + ΔS) / "
    "np.linalg.det(S), an IEEE division; at t = 1 S = 0 and the ratio is ±inf or NaN by the sign of det ΔS's rounding "
    "noise, so a server may upload a rank-deficient buffer; with 9 samples in S (d = 10) det S is rounding noise of "
    "either sign, and when it is negative the ratio against a full-rank S + ΔS is negative: that server never "
    "uploads again. (d) carry_synchronized_copies: its Homo-DC has no local detection, so a renewal sums the local "
    "clusters' synchronized copies (l_cluster.S) instead of their users' sums, and the buffers pending at a phase "
    "start are emptied uncounted; a stuck server keeps its 9 samples for good and learns each phase only from "
    "that phase's buffer. Reference code, seeds 0-9: 22 of 50 servers end with 8-9 synchronized samples (the "
    "others ~3,200), ~3,300 samples dropped per run, 1,224 uploads per server that does not stick (median "
    "3,666 a run); ours with (c) + (d): 20 of 50 (with either alone: none), 1,219 uploads per server "
    "that does not stick (benchmarks/fclub_homo_dc_servers.py prints both per seed). "
    "The trigger's determinants follow the reference's float operations (the double count as its two += on one "
    "array), but by LU in correctly rounded steps without BLAS (portable_det): LAPACK's rounding noise, which "
    "decides which singular copies come out negative, differs between CPUs and BLAS kernels, so which servers "
    "stick differs from the reference seed by seed while the share that sticks matches. The issue-15 preset's "
    "determinants were of S + 2I (never singular) and rebuilt every phase from the users' sums.",
    "(a) shared_statistics_defect: THE REFERENCE CODE'S DOUBLE-COUNTING DEFECT. After a renewal its local clusters "
    "are given the global cluster's S and u arrays themselves, so the global `+=` and the local `+=` of an upload "
    "hit one array: every upload counts twice, and every member sees it at once. Counts T are ints and are not "
    "shared. Off in the faithful preset.",
    "(b) merge_rule = reference: the reference code merges only when some pair of local clusters fails Eq. 4 and "
    "its partition array changed; at t = 1 every pair passes, so its FCLUB-DC runs as per-server learners until "
    "the first local split (about t = 4,095). Its Homo-DC, whose merge test always passes, never merges (and "
    "renews every phase); its FCLUB merges greedily in index order and never the last local cluster "
    "(loop bounds one short).",
    "Communication. The reference code counts an upload, a download each round a member of the arriving user's "
    "global cluster passes Eq. 6 (even with nothing to download), and one per phase whose partition changed; our "
    "'reference way' column counts the same events of our runs (FCLUB: one per round). The paper's C(T) also "
    "counts phase-start uploads and renewal pushes, and every download the double count replaces (shared "
    "updates: in the reference code the members hold one array, so nothing is sent). Remaining difference: with "
    "the reference's CDP noise (std ≈ 5,000 per entry) the phase-start copies at its global server carry the "
    "noise (S += H_now) while the local copies do not, so in phases without a renewal Eq. 6 compares a noisy "
    "global matrix with a noise-free local one and passes in most rounds with an empty buffer. Instrumenting a "
    "copy of the reference code (seed 0): CDP-FCLUB-DC's 1,653 events are 77 uploads, 1,573 such download checks "
    "and 3 partition changes; FCLUB-DC's 8,344 are 8,341 uploads, 0 downloads (the shared arrays make Eq. 6's "
    "ratio 1) and 3 changes. Our preset keeps no noisy global copy, so its CDP count the reference's way is of the "
    "order of its uploads (~100); FCLUB-DC's counts agree in size. rebuild_local_copies (§7.3) adds the idle "
    "checks of phases without a renewal (noise-free).",
]
