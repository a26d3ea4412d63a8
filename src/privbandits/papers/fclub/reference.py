"""What the FCLUB paper reports (spec ``fclub.md`` §6)."""

from __future__ import annotations

from typing import TypedDict


class _Runs(TypedDict):
    """The reference code's runs: their horizon, and per algorithm each seed's regret and communication."""

    horizon: int
    regret: dict[str, list[float]]
    communication: dict[str, list[int]]

PAPER_TABLE3 = {  # spec §6.5, ms per round; rows presumably synthetic and MovieLens
    "synthetic": {"CDP-FCLUB-DC": 1.707, "FCLUB-DC": 1.814, "FCLUB": 58.870, "SCLUB": 3.805, "CLUB": 0.779,
                  "LinUCB": 0.647, "Homo-DC": 1.277, "Homo": 29.265},
    "movielens": {"CDP-FCLUB-DC": 1.667, "FCLUB-DC": 1.892, "FCLUB": 83.492, "SCLUB": 3.855, "CLUB": 0.776,
                  "LinUCB": 0.654, "Homo-DC": 1.301, "Homo": 35.645},
}  # fmt: skip

FIG3_PAPER = {  # spec §6.2 parameter study: panel -> (the paper's statement, the trend it implies)
    "d": ("larger d converges more slowly", "increasing"),
    "epsilon": ("text: smaller ε is better (A20: expect the opposite)", "decreasing"),
    "L": ("regret increases with L", "increasing"),
    "m": ("regret increases with m", "increasing"),
    "n": ("regret does not grow with n (deviation from theory)", "flat"),
}

REFERENCE_CODE_SOURCE = (
    "Reference code: github.com/ZhaoHaoRu/Federated-Clustering-of-Bandits at 7119720 (the spec's RC), unchanged, "
    "under numpy 1.23.5 and networkx 3.1; per seed s: np.random.seed(s) and random.seed(s), its own 40 users "
    "(raw_data/synthetic_data/10_theta.npy), L = 5 servers of 8 users, d = 10, K = 10 items, the DC variants' "
    "13 whole phases (T = 16,382 rounds) and FCLUB for 16,382 rounds; regret = the sum of its per-round regret, "
    "communication = its own counter at the end. Rerun: python benchmarks/fclub_reference_gap.py --reference DIR."
)

REFERENCE_CODE_RUNS: _Runs = {  # measured by benchmarks/fclub_reference_gap.py (issue 15), seeds 0-9
    "horizon": 2**14 - 2,
    "regret": {
        "FCLUB-DC": [423.4, 497.2, 552.9, 471.6, 553.4, 443.6, 562.1, 355.9, 453.8, 451.3],
        "CDP-FCLUB-DC": [482.5, 446.0, 702.9, 616.8, 511.4, 481.5, 529.1, 480.9, 430.3, 1059.8],
        "Homo-DC": [1183.1, 1035.2, 935.4, 960.1, 1060.5, 1057.4, 1043.0, 1039.2, 1162.8, 1076.9],
        "FCLUB": [534.9, 487.4, 588.0, 490.9, 547.3, 473.9, 424.1, 505.0, 494.7, 468.2],
    },
    "communication": {
        "FCLUB-DC": [8344, 8548, 8845, 7858, 7975, 9771, 9453, 7779, 8798, 8439],
        "CDP-FCLUB-DC": [1653, 1833, 2328, 1907, 1439, 3192, 2037, 745, 1470, 3043],
        "Homo-DC": [],  # its code counts nothing
        "FCLUB": [16382, 16382, 16382, 16382, 16382, 16382, 16382, 16382, 16382, 16382],  # one per round
    },
}  # fmt: skip
"""The reference code's final regret and communication count per seed (0-9), at ``horizon``."""
