"""The map's report from stored runs alone: figure, per-environment tables, semantics, best system at each ε."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privbandits.experiments.paper import Claim, PaperReport
from privbandits.papers.data_choice import shown_source
from privbandits.papers.privacy_map.environments import MapEnvironment, environments
from privbandits.papers.privacy_map.grid import unit_label
from privbandits.papers.privacy_map.options import MapOptions
from privbandits.papers.privacy_map.plots import map_figure
from privbandits.papers.privacy_map.semantics import SEMANTICS
from privbandits.papers.privacy_map.summary import PointSummary, better, notion_of, ranked_within, summarise
from privbandits.papers.privacy_map.systems import FACTORIZATION, placed

TITLE = "Privacy–utility map: every private system and the DP LinUCB baselines on shared problems"


@dataclass(frozen=True)
class Panel:
    """One environment's summaries and the systems its compatibility checks refused (with why)."""

    env: MapEnvironment
    rows: list[PointSummary]
    refused: dict[str, str]


def panels_of(options: MapOptions, points: dict[str, dict[str, Any]]) -> tuple[list[Panel], list[str]]:
    """Every panel the options give, from the stored runs, and the notes of environments skipped."""
    envs, skipped = environments(options)
    panels = []
    for env in envs:
        kept, refused = placed(env, options)
        panels.append(Panel(env, [summarise(env, point, points) for point in kept], refused))
    return panels, skipped


def _value(row: PointSummary) -> str:
    if math.isnan(row.mean):
        return "n/a"
    digits = 1 if abs(row.mean) >= 10 else 4
    return f"{row.mean:.{digits}f} ± {row.half:.{digits}f}"


def _epsilon(value: float) -> str:
    return "∞" if value == math.inf else f"{value:.3g}"


PER_ROUND_MODELS = frozenset({"mpc_eta"})
"""Privacy models whose ε is per round: the map shows their whole-run composition T·ε beside it."""


def point_epsilon(row: PointSummary, horizon: int) -> str:
    """The point's stated ε, and for a per-round notion its whole-run composition over ``horizon`` rounds."""
    stated = _epsilon(row.point.epsilon)
    if row.point.model not in PER_ROUND_MODELS:
        return stated
    return f"{stated} per round (T·η = {horizon * row.point.epsilon:,.0f} over T = {horizon:,})"


def _bytes(row: PointSummary) -> str:
    if row.bytes_source == "none":
        return "— (one party)"
    return f"{row.bytes_per_round:,.0f} ({row.bytes_source})"


def point_rows(panel: Panel) -> list[list[str]]:
    """One row per point: system, privacy model, ε, the ε a user pays (its unit), utility, seeds, ms and bytes per
    round."""
    header = [
        "point",
        "privacy model",
        "ε on the map",
        "ε a user pays",
        panel.env.metric_name + " (mean ± 95% CI)",
        "seeds",
        "ms / round",
        "payload bytes / round",
    ]
    rows = [header]
    for row in panel.rows:
        rows.append(
            [
                row.point.label,
                SEMANTICS[row.point.model].notion,
                point_epsilon(row, panel.env.horizon),
                row.user_epsilon,
                _value(row),
                str(row.seeds),
                f"{row.ms:.3f}",
                _bytes(row),
            ]
        )
    return rows


def semantics_rows(panels: list[Panel]) -> list[list[str]]:
    """One row per (system, privacy model) on the map, with its points' ε and what the notion buys."""
    header = [
        "system",
        "points (ε on the map)",
        "notion",
        "parameter",
        "protects whom",
        "from whom",
        "per round / whole run",
        "trust needed",
    ]
    seen: dict[tuple[str, str], set[float]] = {}
    for panel in panels:
        for row in panel.rows:
            seen.setdefault((row.point.system, row.point.model), set()).add(row.point.epsilon)
    rows = [header]
    for (system, model), epsilons in seen.items():
        s = SEMANTICS[model]
        values = ", ".join(_epsilon(e) for e in sorted(epsilons))
        rows.append([system, values, s.notion, s.parameter, s.protects, s.from_whom, s.span, s.trust])
    return rows


def _levels(options: MapOptions) -> list[float]:
    return [*sorted(options.epsilons), math.inf]


def _identical(a: PointSummary, b: PointSummary) -> bool:
    return a.values == b.values


def _runner_up(ranked: list[PointSummary]) -> PointSummary | None:
    """The next system's best point that is not the same runs' values (O3M equals LinUCB: lossless)."""
    return next((row for row in ranked[1:] if not _identical(row, ranked[0])), None)


def _verdict(ranked: list[PointSummary]) -> str:
    """Whether the best point is clear of the next system's best (95% intervals apart)."""
    same = [row.point.label for row in ranked[1:] if _identical(row, ranked[0])]
    equal = f"equal to {', '.join(same)} (same values); " if same else ""
    runner = _runner_up(ranked)
    if runner is None:
        return f"{equal}only system this private".removesuffix("; only system this private")
    gap = "within the 95% intervals of" if ranked[0].overlaps(runner) else "clearly ahead of"
    return f"{equal}{gap} {runner.point.label} ({_value(runner)})"


def against_random(panel: Panel, best: PointSummary) -> str:
    """Whether ``best`` is clear of uniform random on the same environment (the floor any learner must beat)."""
    random = next((row for row in panel.rows if row.point.model == "random"), None)
    if random is None or best is random:
        return ""
    return "no better than uniform random" if best.overlaps(random) else "clearly better than uniform random"


def _notions(panel: Panel) -> list[str]:
    """The panel's privacy notions in the order of its points, uniform random's left out (it is the floor)."""
    return list(dict.fromkeys(notion_of(row) for row in panel.rows if row.point.model != "random"))


def best_by_notion(options: MapOptions, panel: Panel) -> list[tuple[str, float, list[PointSummary]]]:
    """Per notion and ε level, the points of that notion ranked (only levels where its best point changes)."""
    found = []
    for notion in _notions(panel):
        previous = None
        for level in _levels(options):
            ranked = ranked_within(panel.env, panel.rows, level, notion)
            if ranked and ranked[0].point.label != previous:
                found.append((notion, level, ranked))
                previous = ranked[0].point.label
    return found


def best_rows(options: MapOptions, panels: list[Panel]) -> list[list[str]]:
    """Per environment, privacy notion and ε level: the best point of that notion whose stated ε is at most
    that level (ranked only against points of the same notion), and whether it is clear of the next system."""
    header = [
        "environment",
        "privacy notion",
        "ε at most",
        "best point",
        "its ε",
        "value",
        "against the next system of this notion",
        "against uniform random",
    ]
    rows = [header]
    for panel in panels:
        for notion, level, ranked in best_by_notion(options, panel):
            best = ranked[0]
            rows.append(
                [
                    panel.env.key,
                    notion,
                    _epsilon(level),
                    best.point.label,
                    point_epsilon(best, panel.env.horizon),
                    _value(best),
                    _verdict(ranked),
                    against_random(panel, best),
                ]
            )
    return rows


def release_rows(panels: list[Panel]) -> list[list[str]]:
    """Joint-DP LinUCB's two continual releases at each equal ε (one notion, joint DP: a like-with-like comparison):
    the tree's point, the square-root factorization's, and which is better or whether they are within the intervals."""
    header = ["environment", "ε (joint DP, both)", "tree", "sqrt factorization", "factorization against the tree"]
    rows = [header]
    for panel in panels:
        by_label = {row.point.label: row for row in panel.rows}
        for row in panel.rows:
            if row.point.system != FACTORIZATION:
                continue
            tree = by_label.get(row.point.label.replace(FACTORIZATION, "Joint-DP LinUCB"))
            if tree is None:
                continue
            verdict = (
                "within the 95% intervals"
                if row.overlaps(tree)
                else ("clearly better" if better(panel.env, row, tree) else "clearly worse")
            )
            rows.append([panel.env.key, _epsilon(row.point.epsilon), _value(tree), _value(row), verdict])
    return rows


def refused_rows(panels: list[Panel]) -> list[list[str]]:
    """Every (environment, system) the config's compatibility checks refuse, with their reason."""
    rows = [["environment", "system left out", "why (the config check's words)"]]
    for panel in panels:
        rows += [[panel.env.key, system, why] for system, why in panel.refused.items()]
    return rows


def _pairs(panel: Panel, first: str, second: str) -> list[tuple[PointSummary, PointSummary]]:
    by_label = {row.point.label: row for row in panel.rows}
    return [(by_label[first], by_label[second])] if first in by_label and second in by_label else []


def _lossless_claim(panels: list[Panel], label: str, name: str) -> Claim | None:
    pairs = [(p.env.key, pair) for p in panels for pair in _pairs(p, "LinUCB (non-private)", label)]
    if not pairs:
        return None
    same = sum(a == b for _, (lin, other) in pairs for a, b in zip(lin.actions, other.actions, strict=True))
    total = sum(len(lin.actions) for _, (lin, _o) in pairs)
    where = ", ".join(key for key, _ in pairs)
    return Claim(
        "O3M Thm. 4.1",
        f"{name} plays central LinUCB's arms (lossless)",
        "lossless (identical decisions)",
        f"identical actions in {same}/{total} runs ({where})",
        "reproduced" if same == total else "not reproduced",
    )


def _twin_pairs(panel: Panel) -> list[tuple[float, float, float]]:
    """(secret-shared value, twin value on the same seed, the twin's spread over seeds) per (η, seed) run."""
    twins = {r.point.epsilon: r for r in panel.rows if r.point.system == "MPC ε-greedy (plaintext twin)"}
    pairs = []
    for row in panel.rows:
        twin = twins.get(row.point.epsilon) if row.point.system == "MPC ε-greedy (secret-shared)" else None
        if twin is None:
            continue
        by_seed = dict(zip(twin.point.seeds, twin.values, strict=True))
        spread = max(twin.values) - min(twin.values)
        pairs += [
            (value, by_seed[seed], spread)
            for seed, value in zip(row.point.seeds, row.values, strict=True)
            if seed in by_seed
        ]
    return pairs


def _twin_claim(panels: list[Panel]) -> Claim | None:
    pairs = [pair for panel in panels for pair in _twin_pairs(panel)]
    if not pairs:
        return None
    worst = max(abs(private - twin) for private, twin, _ in pairs)
    spread = max(spread for *_, spread in pairs)
    same = sum(private == twin for private, twin, _ in pairs)
    ours = (
        f"same value on the same seed in {same}/{len(pairs)} (η, seed) runs; largest difference {worst:.4f} "
        f"against the twin's spread over seeds of up to {spread:.4f}"
    )
    return Claim(
        "MPC paper §5",
        "the secret-shared learner and its float64 twin behave alike (so the twin stands in)",
        "equal up to fixed point",
        ours,
        "reproduced" if worst <= spread else "not reproduced",
    )


def claims(panels: list[Panel]) -> list[Claim]:
    found = [
        _lossless_claim(panels, "O3M VFUCB", "O3M VFUCB"),
        _lossless_claim(panels, "O3M VFUCB + secure aggregation", "O3M VFUCB with secure aggregation"),
        _twin_claim(panels),
    ]
    return [claim for claim in found if claim is not None]


def best_sentences(options: MapOptions, panels: list[Panel]) -> list[str]:
    """Per environment and privacy notion, one sentence naming the best point of that notion at each ε level."""
    sentences = []
    for panel in panels:
        parts: dict[str, list[str]] = {}
        for notion, level, ranked in best_by_notion(options, panel):
            best, runner = ranked[0], _runner_up(ranked)
            tie = " (a tie within the intervals)" if runner is not None and best.overlaps(runner) else ""
            floor = against_random(panel, best)
            floor = f", {floor}" if floor else ""
            text = f"ε ≤ {_epsilon(level)}: {best.point.label} ({_value(best)}){tie}{floor}"
            parts.setdefault(notion, []).append(text)
        for notion, texts in parts.items():
            sentences.append(
                f"Best on {panel.env.key} ({panel.env.metric_name}) under {notion}: " + "; ".join(texts) + "."
            )
    return sentences


NOTES = [
    "ε of different notions are not interchangeable, so a point is ranked only against points of its own notion "
    "(the best-point table and sentences): joint DP's ε (Joint-DP LinUCB, by the tree or the square-root "
    "factorization) covers one round's (x, r) over the whole run, against the other users; local DP's is per user "
    "report, against the server; shuffle DP's is the central ε of one shuffled batch against the server, from the "
    "amplification bound (Feldman, McMillan & Talwar 2021, Thm 3.1), and a Shuffle-DP point whose batch is too small "
    "to amplify is local DP, labelled and ranked as such; FCLUB's is per privatizer of a local server's uploads; the "
    "MPC learner's η = log(|A|/ε) is per round for the opened action (T·η over a run); P2B's −ln(1 − p) is per "
    "shared context behind a trusted shuffler. The 'ε a user pays' column states each in its own unit; the "
    "semantics table says what each notion buys and whom it trusts.",
    "Shuffle-DP LinUCB runs at its base batch (option shuffle_batch, default 100 reports) and at the batch sizes of "
    "option shuffle_batches (by default the smallest batch within the panel's horizon whose shuffle amplifies at "
    "every map ε ≤ 1), each named in its label: where a batch amplifies, the label gives the central ε the bound "
    "yields (at most the stated ε); where it does not, the label says local DP.",
    "O3M has no ε: it is lossless (VFUCB plays LinUCB's arms, checked above), so it sits at ε = ∞ beside LinUCB; "
    "what it leaks is shown by `privbandits run vertical-audit` (geometry of each passive party's vectors; all of "
    "them from d_j known pairs; with secure aggregation, only the passive parties' joint geometry).",
    "The MPC learner: utility is its float64 twin (same exploration draws, proven equal in distribution; docs "
    "page protocols/mpc.md), on every seed; the secret-shared learner itself runs on private_mpc_seeds, "
    "which gives its measured ms and bytes per round and the twin check (claim above). With unbiased truncation "
    "it also tracks the twin over the paper's 60,000 Fashion-MNIST rounds (mpc-fig2 -o data=fashion). Its η needs "
    "ε ≤ 1, so η ≥ log |A| = 2.30.",
    "ms per round is the wall time of the runner's loop divided by the rounds (P2B: by users × interactions), on "
    "whatever machine and load the run had. Bytes per round are measured from the traffic ledger for O3M (masked "
    "vectors and control), FCLUB (uploads, downloads) and the secret-shared MPC learner (every opening), and for "
    "P2B per user interaction; the DP baselines run in one process, so theirs is nominal: 8(d + 1) B of x and r to "
    "the trusted server (joint), 8(d(d + 1)/2 + d) B of a noisy report (local, shuffle).",
    "OBD: the passive party's 161 user × item features are split over two passive parties (41 | 80 | 81), so that "
    "secure aggregation, which needs two or more passive parties, can run; replay counts a round only when the "
    "chosen item was logged, so a run matches about events / items rounds and sees few clicks: intervals are wide.",
    "P2B runs only on a population (its protocol is not a stream of rounds); its panel shows the late users' mean "
    "reward warm-started from P2B's released codes at each p, from raw contexts (non-private, at the largest p) "
    "and cold (nothing shared, ε = 0), all read from the same runs.",
    "Where the table says 'no better than uniform random', the noise swamps the signal at this horizon; "
    "-o epsilons=…,100,1000 extends the axis to where the DP baselines start to learn, though their ε there is no "
    "longer a meaningful protection.",
    "Clustered users: LinUCB and the DP baselines ignore the user (one shared θ); FCLUB learns per cluster.",
]
CALIBRATION_NOTES = {
    "analytic": "Noise: the DP baselines and CDP-FCLUB-DC use the analytic Gaussian (Balle & Wang 2018), the "
    "smallest σ that meets (ε, δ), at the sensitivity each release has once its data are snapped to the noise "
    "grid (docs page privacy.md); -o calibration=paper gives each paper's formula instead.",
    "paper": "Noise: the DP baselines and CDP-FCLUB-DC use each paper's formula (docs pages protocols/dp-baselines.md "
    "and protocols/fclub.md), several times the σ the guarantee needs, at the snapped data's sensitivity.",
}
"""The note on the map's noise calibration, by ``calibration`` option."""


def _stored_environment(panel: Panel, points: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The environment spec the panel's stored runs ran on (data files by path and SHA-256)."""
    first = panel.rows[0].point
    return points[unit_label(panel.env, first.source, first.seeds[0])]["run_spec"]["environment"]


def data_note(panel: Panel, points: dict[str, dict[str, Any]]) -> str:
    """Which data the classification panel ran on, read from its stored runs (the stand-in said as such)."""
    env = _stored_environment(panel, points)
    rounds = f"T = {panel.env.horizon:,} rounds walk shuffled passes over the train split"
    layout = (
        "One context per round, so the shared-θ systems (O3M, the DP baselines) are refused there; LinUCB runs in "
        "the disjoint layout."
    )
    if env["kind"] == "mnist5k":
        file, held = env["path"], env["held_out"]
        where = shown_source(file["path"])
        what = (
            f"real MNIST-5k ({where}, SHA-256 {file['sha256']}), its train split: {1 - held:.0%} of the "
            f"images (4,000 of the real file's 5,000; {held:.0%} held out with split seed {env['split_seed']}, as "
            f"the MPC reproductions split it); pixels / 255, PCA {env['pca_components']} fitted on the train split, "
            f"unit norm. {rounds}."
        )
    elif env["kind"] == "mnist":
        file = env["path"]
        where = shown_source(file["path"])
        what = (
            f"MNIST from the IDX folder {where} (content SHA-256 {file['sha256']}), its {env['split']} split; "
            f"pixels / 255, PCA {env['pca_components']} fitted on the training images, unit norm. {rounds}."
        )
    else:
        what = (
            "STAND-IN: scikit-learn's 1,797 8×8 digits (PCA 20, unit norm), not MNIST; "
            f"T = {panel.env.horizon:,} rounds walk shuffled passes over all of them. For real MNIST run "
            "`privbandits data fetch mnist5k` (then data=auto picks it) or give -o mnist=IDX_FOLDER."
        )
    return f"DATA of the classification panel (data={panel.env.name or panel.env.key}): {what} {layout}"


def report(options: MapOptions, points: dict[str, dict[str, Any]], out: Path) -> PaperReport:
    """The map from the stored runs: figure, tables, semantics, best system at each ε, what could not run."""
    panels, skipped = panels_of(options, points)
    paper = PaperReport("privacy-map", TITLE)
    paper.claims += claims(panels)
    for panel in panels:
        paper.tables[f"{panel.env.title}, T = {panel.env.horizon}"] = point_rows(panel)
    paper.tables["Semantics of every point"] = semantics_rows(panels)
    paper.tables["Best point of each privacy notion at each ε level (ranked within the notion only)"] = best_rows(
        options, panels
    )
    releases = release_rows(panels)
    if len(releases) > 1:
        paper.tables["Joint DP: the square-root factorization against the tree at equal ε"] = releases
    paper.tables["Systems left out where the config checks refuse them"] = refused_rows(panels)
    paper.add_figure(map_figure([(panel.env, panel.rows) for panel in panels]), out / "privacy-map.png")
    data = [data_note(panel, points) for panel in panels if panel.env.key == "classification" and panel.rows]
    notes = [*NOTES, CALIBRATION_NOTES[options.calibration]]
    paper.notes += [*best_sentences(options, panels), *data, *skipped, *notes]
    return paper
