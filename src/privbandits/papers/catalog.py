"""The paper reproductions' catalog: every figure and table by name, and the config experiments with paper panels.

This module imports nothing heavy: entries name their options, grid and report as
``"module:attribute"`` strings, resolved only when used. The library finds :data:`CATALOG`
through the entry point group ``privbandits.reproductions`` (``pyproject.toml``), never by
importing this layer (:mod:`privbandits.experiments.catalog`).
"""

from __future__ import annotations

from privbandits.experiments.reproduction import Catalog, Reproduction

_PAPERS = "privbandits.papers"


ENTRIES: tuple[Reproduction, ...] = (
    # p2b reproductions
    Reproduction(
        "p2b-fig3",
        "P2B paper Fig. 3: ε of pre-sampling + crowd-blending versus the participation probability p",
        f"{_PAPERS}.p2b.options:Fig3Options",
        f"{_PAPERS}.p2b.fig3:tasks",
        f"{_PAPERS}.p2b.fig3:report",
    ),
    Reproduction(
        "p2b-fig4",
        "P2B paper Fig. 4: cold / warm non-private / warm private reward vs users, |A| = 10, 20, 50 (~7 min)",
        f"{_PAPERS}.p2b.options:Fig4Options",
        f"{_PAPERS}.p2b.fig4:tasks",
        f"{_PAPERS}.p2b.fig4:report",
    ),
    Reproduction(
        "p2b-fig5",
        "P2B paper Fig. 5: reward vs context dimension d = 6 … 20, 20,000 early users",
        f"{_PAPERS}.p2b.options:Fig5Options",
        f"{_PAPERS}.p2b.fig5:tasks",
        f"{_PAPERS}.p2b.fig5:report",
    ),
    Reproduction(
        "p2b-fig5-reference",
        "P2B paper Fig. 5 in the reference code's mode (scalar codes, one shared warm agent)",
        f"{_PAPERS}.p2b.options:Fig5ReferenceOptions",
        f"{_PAPERS}.p2b.fig5:tasks",
        f"{_PAPERS}.p2b.fig5:report",
    ),
    Reproduction(
        "p2b-fig6",
        (
            "P2B paper Fig. 6: accuracy vs local interactions, MediaMill and TMC2007 (offline stand-ins unless "
            "ARFF files are given)"
        ),
        f"{_PAPERS}.p2b.options:Fig6Options",
        f"{_PAPERS}.p2b.fig6:tasks",
        f"{_PAPERS}.p2b.fig6:report",
    ),
    Reproduction(
        "p2b-fig6-reference",
        "P2B paper Fig. 6 in the reference code's mode (scalar codes, one shared warm agent)",
        f"{_PAPERS}.p2b.options:Fig6ReferenceOptions",
        f"{_PAPERS}.p2b.fig6:tasks",
        f"{_PAPERS}.p2b.fig6:report",
    ),
    Reproduction(
        "p2b-fig7",
        (
            "P2B paper Fig. 7: CTR vs local interactions on Criteo (a Criteo-like offline stand-in unless a Kaggle "
            "file is given), k = 32 and 128, default and reference-compatible modes; then the OBD sample"
        ),
        f"{_PAPERS}.p2b.options:Fig7Options",
        f"{_PAPERS}.p2b.fig7:tasks",
        f"{_PAPERS}.p2b.fig7:report",
    ),
    # end of p2b reproductions
)

# fclub reproductions
_FCLUB = f"{_PAPERS}.fclub"
ENTRIES += (
    Reproduction(
        "fclub-fig2",
        "FCLUB paper Fig. 2: cumulative regret of CDP-FCLUB-DC (reference-compatible and faithful), FCLUB-DC, "
        "FCLUB, Homo-DC, Homo, SCLUB, CLUB, LinUCB; synthetic and two MovieLens settings (real data), "
        "T = 131,070, 10 seeds (~60 min on 2 cores)",
        f"{_FCLUB}.options:Fig2Options",
        f"{_FCLUB}.fig2:tasks",
        f"{_FCLUB}.fig2:report",
    ),
    Reproduction(
        "fclub-fig3",
        "FCLUB paper Fig. 3: CDP-FCLUB-DC's regret versus d, ε, L, m, n, both option sets, T = 131,070, "
        "10 seeds (380 distinct runs, each 8x the rounds of -o horizon=16382, which took 13 min on 2 cores)",
        f"{_FCLUB}.options:Fig3Options",
        f"{_FCLUB}.fig3:tasks",
        f"{_FCLUB}.fig3:report",
    ),
    Reproduction(
        "fclub-fig4",
        "FCLUB paper Fig. 4: cumulative communication of FCLUB, FCLUB-DC and CDP-FCLUB-DC (the runs of "
        "fclub-fig2, stored once)",
        f"{_FCLUB}.options:Fig4Options",
        f"{_FCLUB}.fig4:tasks",
        f"{_FCLUB}.fig4:report",
    ),
    Reproduction(
        "fclub-table3",
        "FCLUB paper Table 3: ms per round of every algorithm beside the paper's, best of 3 runs at T = 131,070 "
        "(-o repeats=1 took 6 min on 2 cores)",
        f"{_FCLUB}.options:Table3Options",
        f"{_FCLUB}.table3:tasks",
        f"{_FCLUB}.table3:report",
    ),
    Reproduction(
        "fclub-reference-gap",
        "FCLUB reference code vs the reference-compatible preset on its own 40 users (issue 15): medians, "
        "Mann–Whitney p, which reference behaviour closes the gap, communication both ways; needs "
        "-o reference_dir=<reference checkout> (T = 16,382, 10 seeds, ~25 min on 2 cores)",
        f"{_FCLUB}.options:GapOptions",
        f"{_FCLUB}.gap:tasks",
        f"{_FCLUB}.gap:report",
    ),
)
# end of fclub reproductions

# mpc reproductions
_MPC = f"{_PAPERS}.mpc"
_MPC_DESCRIPTIONS = {
    "fig2": "Fig. 2: reward during training, private vs plaintext, four ε (MNIST-5k if cached, else the digits "
    "stand-in, ~3 min; data=fashion: 60,000 rounds)",
    "fig3": "Fig. 3: reward vs η for three data set sizes (twin sweep + private check; ~2 min)",
    "fig4": "Fig. 4: time per round vs |A| (~1 min; the timings are stored)",
    "fig5": "Fig. 5: time and traffic per round vs |P| (~1 min; the timings are stored)",
    "fig6": "Fig. 6: reward vs η for several |A|, k-means arms (twin; ~2 min)",
    "fig7": "Fig. 7: membership-inference advantage during training, both metrics (twin; ~2 min)",
    "fig8": "Fig. 8: reward vs fixed-point precision L = 14 … 26, CrypTen's and the exact update mask, 3 runs of "
    "3 sweeps (private; ~30 min)",
    "fig9": "Fig. 9: reward vs Newton–Raphson iterations (private; ~2 min)",
    "table1": "Table 1: slow-down and rounds of add, mul, reciprocal, argmax vs numpy; the whole learner (~1 min; "
    "the timings are stored)",
}
ENTRIES += tuple(
    Reproduction(
        f"mpc-{figure}",
        f"MPC bandit paper {description}",
        f"{_MPC}.options:{figure.capitalize()}Options",
        f"{_MPC}.{figure}:tasks",
        f"{_MPC}.{figure}:report",
    )
    for figure, description in _MPC_DESCRIPTIONS.items()
)
# end of mpc reproductions

# vertical reproductions
_VERTICAL = f"{_PAPERS}.vertical"
ENTRIES += (
    Reproduction(
        "vertical-fig5",
        "Vertical O3M paper Fig. 5: relative cost (op-count model and measured) and bytes per step",
        f"{_VERTICAL}.options:Fig5Options",
        f"{_VERTICAL}.fig5:tasks",
        f"{_VERTICAL}.fig5:report",
    ),
    Reproduction(
        "vertical-audit",
        "Beyond the vertical paper: what the active party learns from O3M transcripts, with and without "
        "secure aggregation",
        f"{_VERTICAL}.options:AuditOptions",
        f"{_VERTICAL}.audit:tasks",
        f"{_VERTICAL}.audit:report",
    ),
    Reproduction(
        "vertical-obd",
        "Vertical O3M paper Fig. 6(c) analogue: VFUCB vs the active party alone, replayed on the OBD sample",
        f"{_VERTICAL}.options:ObdOptions",
        f"{_VERTICAL}.obd:tasks",
        f"{_VERTICAL}.obd:report",
    ),
)
# end of vertical reproductions

# privacy map
ENTRIES += (
    Reproduction(
        "privacy-map",
        "Privacy–utility map (issue 16): LinUCB, O3M, FCLUB, MPC ε-greedy, P2B and the joint / local / shuffle DP "
        "LinUCB baselines over ε on linear-Gaussian, clustered users, MNIST-5k (digits if not cached), OBD replay "
        "and a P2B population (~7–9 min on 2 cores)",
        f"{_PAPERS}.privacy_map.options:MapOptions",
        f"{_PAPERS}.privacy_map.grid:tasks",
        f"{_PAPERS}.privacy_map.report:report",
    ),
)
# end of privacy map

CATALOG = Catalog(
    ENTRIES,
    config_reports={
        "vertical-fig4": f"{_VERTICAL}.configs:fig4_report",
        "vertical-fig6": f"{_VERTICAL}.configs:fig6_report",
    },
)
"""The paper reproductions, and the shipped vertical-fig4 / vertical-fig6 configs' paper panels and claims."""
