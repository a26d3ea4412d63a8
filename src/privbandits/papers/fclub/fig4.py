"""Fig. 4: cumulative communication of FCLUB, FCLUB-DC and CDP-FCLUB-DC (the units of Fig. 2)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from privbandits.experiments.paper import Claim, PaperReport
from privbandits.experiments.tasks import Task
from privbandits.papers.fclub.options import COMMUNICATING, FAITHFUL, Fig4Options
from privbandits.papers.fclub.panels import mode_notes, settings, title
from privbandits.papers.fclub.runs import Setting, curves, kept_rounds, run_task, runs_of

_HEADER = ["algorithm", "C(T), paper's count", "reference code's count", "per phase, last three phases",
           "payload MB (seeds measured)"]  # fmt: skip
_DC = ("FCLUB-DC", "CDP-FCLUB-DC", FAITHFUL)


def panels(options: Fig4Options) -> tuple[dict[Setting, int], list[str]]:
    return settings(
        options.include_movielens, options.horizon, options.movielens_horizon, options.data_dir,
        options.movielens_ratings,
    )  # fmt: skip


def tasks(options: Fig4Options) -> list[Task]:
    """The communicating algorithms × seeds on every setting: the same units as Fig. 2's."""
    found, _ = panels(options)
    return [run_task(a, s, T, seed) for s, T in found.items() for seed in range(options.seeds) for a in COMMUNICATING]


def report(options: Fig4Options, points: dict[str, dict], out: Path) -> PaperReport:
    horizon, seeds = options.horizon, options.seeds
    report = PaperReport("fclub-fig4", f"FCLUB paper, Fig. 4 (cumulative communication, T = {horizon:,})")
    out.mkdir(parents=True, exist_ok=True)
    found, report.notes = panels(options)
    fig, axes = plt.subplots(1, len(found), figsize=(7 * len(found), 5), dpi=110, squeeze=False)
    for ax, (setting, T) in zip(axes[0], found.items(), strict=True):
        final, growth = _panel(report, points, setting, T, seeds, ax)
        report.claims += _claims(f"Fig. 4, {setting.kind}", final, growth)
    fig.suptitle("FCLUB Fig. 4 reproduced: cumulative communication (uploads + downloads, mean ± 1 std)")
    report.add_figure(fig, out / "fclub-fig4.png")
    report.notes += mode_notes(horizon, seeds) + [
        "C(T) counts every message between a local server and the global server (§1.4, A23): phase-start uploads, "
        "renewal pushes, asynchronous uploads and downloads. FCLUB uploads and downloads every round (1 upload + "
        "L' − 1 downloads). The reference code's count (async events + 1 per phase with a partition change; FCLUB "
        "1 per round) is in the table.",
        "Faithful CDP: every upload adds 3ρI, so Eq. 5 holds by itself while a cluster's copy holds fewer than "
        "about d/ln U ≈ 1000 such shifts: after each renewal (the noisy merge changes the partition at most phase "
        "starts) every visit uploads again for a while, hence the staircase "
        "(tests/protocols/fclub/test_fclub_reductions.py).",
        "Runs are the units of fclub-fig2 (the same tasks, stored once). Payload bytes are the traffic ledger's sum "
        "over every message (float64 statistics).",
    ]
    return report


def _panel(report: PaperReport, points: dict, setting: Setting, T: int, seeds: int, ax) -> tuple[dict, dict]:
    """One setting: its table and curves; returns the mean C(T) and the last phases' growth by algorithm."""
    rounds = kept_rounds(T)
    ends = [np.searchsorted(rounds, 2**s - 2) for s in range(2, T.bit_length() + 1) if 2**s - 2 <= T]
    rows, final, growth = [list(_HEADER)], {}, {}
    for name in COMMUNICATING:
        communication = curves(points, name, setting, T, seeds, "communication")
        mean, std = communication.mean(axis=0), communication.std(axis=0)
        final[name] = mean[-1]
        per_phase = np.diff(mean[ends])[-3:]
        growth[name] = per_phase[-1] / per_phase[-2]
        runs = runs_of(points, name, setting, T, seeds)
        reference = np.mean([run["reference_communication"] for run in runs])
        measured = [run["bytes"] for run in runs if run.get("bytes") is not None]
        payload = f"{np.mean(measured) / 1e6:,.1f} ({len(measured)}/{seeds})" if measured else "not recorded"
        rows.append([name, f"{mean[-1]:,.0f} ± {communication[:, -1].std():,.0f}", f"{reference:,.0f}",
                     " → ".join(f"{v:,.0f}" for v in per_phase), payload])  # fmt: skip
        (line,) = ax.plot(rounds, mean, label=name, ls="--" if name == FAITHFUL else "-")
        ax.fill_between(rounds, mean - std, mean + std, color=line.get_color(), alpha=0.15)
    report.tables[f"Fig. 4, {title(setting, T)}"] = rows
    ax.set(xlabel="round t", ylabel="cumulative communication rounds", title=title(setting, T), yscale="log")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return final, growth


def _claims(where: str, final: dict[str, float], growth: dict[str, float]) -> list[Claim]:
    ratio = {n: final["FCLUB"] / final[n] for n in _DC}
    return [
        Claim(
            where, "FCLUB (full communication) is far above the DC variants", "yes",
            ", ".join(f"FCLUB / {n} = {r:.1f}x" for n, r in ratio.items()),
            "reproduced" if min(ratio.values()) >= 3 else "partly" if min(ratio.values()) > 1 else "not reproduced",
        ),
        Claim(
            where, "the DC variants grow about logarithmically (FCLUB linearly)", "yes",
            "events in the last phase / the one before (a doubling of t; 1 = logarithmic, 2 = linear): "
            + ", ".join(f"{n} {growth[n]:.2f}" for n in COMMUNICATING),
            "reproduced" if all(growth[n] < 1.5 for n in _DC) and growth["FCLUB"] > 1.8 else "partly",
        ),
    ]  # fmt: skip
