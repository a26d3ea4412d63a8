# ruff: noqa: E501 (the pinned cases' names are long)
"""FCLUB's results pinned bit for bit: regret and communication per round, the communication counts, the privacy
ledger's totals, the privacy report and the numerical repairs of every variant (FCLUB-DC, FCLUB, CDP-FCLUB-DC, Homo,
Homo-DC), in the faithful and the reference-compatible presets, with the issue-15 options on and off.

The pins were captured from the code before the parties learned only from messages (issue 17 step 1, commit
d68b9cf): making the message boundary real must not move a single result. A change that moves results on purpose
regenerates them (the fingerprint below, printed for every case) and says why in its commit. Moved on purpose since:
the three faithful CDP-FCLUB-DC cases with ``rebuild_local_copies`` (regret and privacy report), when the noise
chain stopped restarting at H̃ with privatized uploads (the first upload after a phase start had gone out raw);
the seven reference-compatible Homo-DC cases, when that preset gained ``ridge_in_recommendation_only`` and
``carry_synchronized_copies`` (issue 29: the reference Homo-DC's gap). The issue-15 Homo-DC preset is the case with
both off, and its pins are the old ``reference homo-dc {}`` ones, unchanged.

Hashes are of the float64/int64 arrays' bytes (this machine's floating point; small horizons, one seed).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import asdict
from math import inf

import numpy as np
import pytest

from privbandits.envs.clustered import ClusteredLinearBandit
from privbandits.protocols.fclub import FCLUBOutcome, run_fclub
from privbandits.protocols.fclub_config import FCLUBConfig

VARIANTS = ("cdp-fclub-dc", "fclub-dc", "fclub", "homo-dc", "homo")
ASYNCHRONOUS = ("cdp-fclub-dc", "fclub-dc", "homo-dc")


def cases() -> dict[str, tuple[str, str, dict]]:
    """Name -> (preset, variant, options): each variant in both presets, each issue-15 option switched."""
    out = {}
    for variant in VARIANTS:
        reference = FCLUBConfig.reference_compatible(variant)
        faithful = [{}, {"merge_rule": "reference"}, {"rebuild_local_copies": True}, {"renew_every_phase": True}]
        ablations = [{}, {"merge_rule": "components"}, {"rebuild_local_copies": True}]
        if variant in ASYNCHRONOUS:
            faithful += [
                {"shared_statistics_defect": True},
                {"shared_statistics_defect": True, "merge_rule": "reference", "rebuild_local_copies": True,
                 "renew_every_phase": True},
            ]  # fmt: skip
            ablations += [
                {"shared_statistics_defect": False},
                {"renew_every_phase": not reference.renew_every_phase},
                {"shared_statistics_defect": False, "merge_rule": "components"},
            ]
            if reference.carry_synchronized_copies:  # Homo-DC: the issue-15 preset, before issue 29's options
                ablations.append({"carry_synchronized_copies": False, "ridge_in_recommendation_only": False})
        else:
            faithful += [{"detect_every_round": True}, {"detect_every_round": True, "merge_rule": "reference"}]
            ablations += [{"detect_every_round": not reference.detect_every_round}, {"renew_every_phase": True}]
        for options in faithful:
            out[f"faithful {variant} {json.dumps(options, sort_keys=True)}"] = ("faithful", variant, options)
        for options in ablations:
            out[f"reference {variant} {json.dumps(options, sort_keys=True)}"] = ("reference", variant, options)
    for options in [
        {"lifecycle": "reset_every_phase"},
        {"noise_in_trigger_only": True},
        {"recommendation": "with_own_buffer"},
        {"thresholds": "theoretical"},
        {"tree_depth": "reference"},
        {"lifecycle": "reset_every_phase", "rebuild_local_copies": True},
        {"noise_in_trigger_only": True, "rebuild_local_copies": True},
        {"merge_same_server": True},
        {"pd_repair": "shift", "beta_scale": 0.01},
    ]:
        out[f"faithful cdp-fclub-dc {json.dumps(options, sort_keys=True)}"] = ("faithful", "cdp-fclub-dc", options)
    return out


def config(preset: str, variant: str, options: dict, horizon: int) -> FCLUBConfig:
    make = FCLUBConfig.for_variant if preset == "faithful" else FCLUBConfig.reference_compatible
    return make(variant, horizon=horizon, **options)


def digest(value: object) -> str:
    data = value.tobytes() if isinstance(value, np.ndarray) else repr(value).encode()
    return hashlib.sha256(data).hexdigest()[:20]


def fingerprint(outcome: FCLUBOutcome) -> tuple:
    """(regret hash, communication hash, Communication fields, (ledger entries, Σε, Σδ), report hash, repairs)."""
    bandit = outcome.bandit
    entries = bandit.ledger.entries
    epsilon, delta = bandit.ledger.basic_composition()
    report = asdict(bandit.privacy_report()) if bandit.config.private else None
    return (
        digest(outcome.regret),
        digest(outcome.communication),
        tuple(asdict(bandit.communication).values()),
        (len(entries), epsilon, delta),
        digest(report),
        tuple(asdict(bandit.repairs).values()),
    )


def small_env() -> ClusteredLinearBandit:
    return ClusteredLinearBandit(n_users=12, n_clusters=3, dim=5, n_arms=6)


# Captured at commit d68b9cf (before issue 17 step 1) by running this file as a script.
SMALL = {  # fmt: skip
    "faithful cdp-fclub-dc {}": (
        "fcacf9f57121988db733",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"merge_rule": "reference"}': (
        "4e4844c2f23877db97b2",
        "39a7ca7d4c4a4d848810",
        (21, 3, 254, 0, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"rebuild_local_copies": true}': (
        "2964382657598325d337",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 252, False),
        (275, 275.0, 27.5),
        "159e63d046ed22aa915f",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"renew_every_phase": true}': (
        "a66a48419fda950f6e4f",
        "b15743288b18e57aca21",
        (21, 21, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "487d502624d39e6ff796",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"shared_statistics_defect": true}': (
        "543f46794c8d74d3e4cd",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 4, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"merge_rule": "reference", "rebuild_local_copies": true, "renew_every_phase": true, "shared_statistics_defect": true}': (
        "4613e6d4c7a22e0d7e78",
        "c5c18d6c766c7bf7c6c0",
        (21, 21, 254, 0, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "ab7ddf790a40dc036c8d",
        (0, 0),
    ),
    "reference cdp-fclub-dc {}": (
        "608ecc0820b5344cf232",
        "aed9ecbf79db76275688",
        (21, 21, 13, 0, 1, 254, 0, 0, False),
        (34, inf, None),
        "ca4651a8c12569f23a2e",
        (0, 34),
    ),
    'reference cdp-fclub-dc {"merge_rule": "components"}': (
        "a82c74483af07c1696da",
        "47ab17eaeec15bca32bb",
        (21, 21, 13, 26, 1, 254, 26, 0, False),
        (34, inf, None),
        "ca4651a8c12569f23a2e",
        (0, 34),
    ),
    'reference cdp-fclub-dc {"rebuild_local_copies": true}': (
        "7ab99163bdca5b850ff2",
        "c48dc9050d2d61c988b4",
        (21, 3, 30, 0, 1, 254, 0, 0, False),
        (51, inf, None),
        "08265bcf69daf3450665",
        (0, 54),
    ),
    'reference cdp-fclub-dc {"shared_statistics_defect": false}': (
        "7ab99163bdca5b850ff2",
        "aed9ecbf79db76275688",
        (21, 21, 13, 0, 1, 254, 0, 0, False),
        (34, inf, None),
        "ca4651a8c12569f23a2e",
        (0, 34),
    ),
    'reference cdp-fclub-dc {"renew_every_phase": true}': (
        "608ecc0820b5344cf232",
        "aed9ecbf79db76275688",
        (21, 21, 13, 0, 1, 254, 0, 0, False),
        (34, inf, None),
        "ca4651a8c12569f23a2e",
        (0, 34),
    ),
    'reference cdp-fclub-dc {"merge_rule": "components", "shared_statistics_defect": false}': (
        "74b1b322065bcd370421",
        "47ab17eaeec15bca32bb",
        (21, 21, 13, 26, 1, 254, 0, 0, False),
        (34, inf, None),
        "ca4651a8c12569f23a2e",
        (0, 34),
    ),
    "faithful fclub-dc {}": (
        "2c31c25e8958e2d9b4e1",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful fclub-dc {"merge_rule": "reference"}': (
        "5d15f2ed5fac5dfc33ad",
        "39a7ca7d4c4a4d848810",
        (21, 3, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful fclub-dc {"rebuild_local_copies": true}': (
        "8a0142eefa6ed380485c",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 252, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful fclub-dc {"renew_every_phase": true}': (
        "2c31c25e8958e2d9b4e1",
        "b15743288b18e57aca21",
        (21, 21, 254, 508, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful fclub-dc {"shared_statistics_defect": true}': (
        "efe2a7e41b80b263fb2c",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 4, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful fclub-dc {"merge_rule": "reference", "rebuild_local_copies": true, "renew_every_phase": true, "shared_statistics_defect": true}': (
        "e9af14bf10bb4c609151",
        "c5c18d6c766c7bf7c6c0",
        (21, 21, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "reference fclub-dc {}": (
        "8ca8d5e42b4cefc14f43",
        "39a7ca7d4c4a4d848810",
        (21, 3, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference fclub-dc {"merge_rule": "components"}': (
        "04473fdd349a2792a2ad",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 4, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference fclub-dc {"rebuild_local_copies": true}': (
        "7553f148bc4d6ce435b1",
        "39a7ca7d4c4a4d848810",
        (21, 3, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference fclub-dc {"shared_statistics_defect": false}': (
        "7553f148bc4d6ce435b1",
        "39a7ca7d4c4a4d848810",
        (21, 3, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference fclub-dc {"renew_every_phase": true}': (
        "c3d3b3266c95b7bf9564",
        "c5c18d6c766c7bf7c6c0",
        (21, 21, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference fclub-dc {"merge_rule": "components", "shared_statistics_defect": false}': (
        "02fbe8003aec4f8af5e2",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "faithful fclub {}": (
        "2c31c25e8958e2d9b4e1",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful fclub {"merge_rule": "reference"}': (
        "5281e9c9ef7a13be74c9",
        "2836e833a4d503aeccab",
        (21, 3, 254, 160, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful fclub {"rebuild_local_copies": true}': (
        "8a0142eefa6ed380485c",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful fclub {"renew_every_phase": true}': (
        "2c31c25e8958e2d9b4e1",
        "b15743288b18e57aca21",
        (21, 21, 254, 508, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful fclub {"detect_every_round": true}': (
        "ea1938b0dde80e57f292",
        "e791e1c960ba397442be",
        (762, 9, 254, 323, 3, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful fclub {"detect_every_round": true, "merge_rule": "reference"}': (
        "ee9b9b98680aa44c1e48",
        "bdd842b6863cbbf670ac",
        (762, 12, 254, 99, 4, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "reference fclub {}": (
        "d7f48ba1d53fd2d6c9a2",
        "44a0a87631c59af188f8",
        (762, 6, 254, 114, 2, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference fclub {"merge_rule": "components"}': (
        "9fa8b8b1f189ad5d926c",
        "a3b2203aba0790f2356f",
        (762, 9, 254, 353, 3, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference fclub {"rebuild_local_copies": true}': (
        "cdca4c256c30cca6da42",
        "722cb18081030ff82a32",
        (762, 6, 254, 104, 2, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference fclub {"detect_every_round": false}': (
        "0b987b14a406522dd388",
        "2836e833a4d503aeccab",
        (21, 3, 254, 160, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference fclub {"renew_every_phase": true}': (
        "d7f48ba1d53fd2d6c9a2",
        "c96fecb6650841daf407",
        (762, 762, 254, 114, 2, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "faithful homo-dc {}": (
        "2c31c25e8958e2d9b4e1",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful homo-dc {"merge_rule": "reference"}': (
        "5d15f2ed5fac5dfc33ad",
        "39a7ca7d4c4a4d848810",
        (21, 3, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful homo-dc {"rebuild_local_copies": true}': (
        "8a0142eefa6ed380485c",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 252, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful homo-dc {"renew_every_phase": true}': (
        "2c31c25e8958e2d9b4e1",
        "b15743288b18e57aca21",
        (21, 21, 254, 508, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful homo-dc {"shared_statistics_defect": true}': (
        "efe2a7e41b80b263fb2c",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 4, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful homo-dc {"merge_rule": "reference", "rebuild_local_copies": true, "renew_every_phase": true, "shared_statistics_defect": true}': (
        "e9af14bf10bb4c609151",
        "c5c18d6c766c7bf7c6c0",
        (21, 21, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "reference homo-dc {}": (
        "89533c76e364c42d26e8",
        "646834b155165091cb81",
        (21, 21, 153, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo-dc {"merge_rule": "components"}': (
        "96716c5043d72dc46453",
        "db779ddfa9f3a3b9d256",
        (21, 21, 79, 158, 1, 254, 158, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo-dc {"rebuild_local_copies": true}': (
        "89533c76e364c42d26e8",
        "646834b155165091cb81",
        (21, 21, 153, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo-dc {"shared_statistics_defect": false}': (
        "d2380cdc85f3389e799f",
        "944a6491d8a5059e2462",
        (21, 21, 244, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo-dc {"renew_every_phase": false}': (
        "8ca8d5e42b4cefc14f43",
        "238d18a26543d0ec5eed",
        (21, 3, 244, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo-dc {"merge_rule": "components", "shared_statistics_defect": false}': (
        "8bab3687d552514f08fc",
        "4545f2b670d2384820f0",
        (21, 21, 99, 198, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "faithful homo {}": (
        "2c31c25e8958e2d9b4e1",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful homo {"merge_rule": "reference"}': (
        "5d15f2ed5fac5dfc33ad",
        "39a7ca7d4c4a4d848810",
        (21, 3, 254, 0, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful homo {"rebuild_local_copies": true}': (
        "8a0142eefa6ed380485c",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful homo {"renew_every_phase": true}': (
        "2c31c25e8958e2d9b4e1",
        "b15743288b18e57aca21",
        (21, 21, 254, 508, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful homo {"detect_every_round": true}': (
        "2c31c25e8958e2d9b4e1",
        "a8dc06065458fca40510",
        (762, 3, 254, 508, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful homo {"detect_every_round": true, "merge_rule": "reference"}': (
        "5d15f2ed5fac5dfc33ad",
        "5124c4aebb20e8e200ff",
        (762, 3, 254, 0, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "reference homo {}": (
        "cdca4c256c30cca6da42",
        "39a7ca7d4c4a4d848810",
        (21, 3, 254, 0, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo {"merge_rule": "components"}': (
        "8d24663686d556177376",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo {"rebuild_local_copies": true}': (
        "cdca4c256c30cca6da42",
        "39a7ca7d4c4a4d848810",
        (21, 3, 254, 0, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo {"detect_every_round": true}': (
        "cdca4c256c30cca6da42",
        "5124c4aebb20e8e200ff",
        (762, 3, 254, 0, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo {"renew_every_phase": true}': (
        "cdca4c256c30cca6da42",
        "c5c18d6c766c7bf7c6c0",
        (21, 21, 254, 0, 1, 254, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"lifecycle": "reset_every_phase"}': (
        "d71a1e0343bda46282a2",
        "b15743288b18e57aca21",
        (21, 21, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "eec458934f279c8cdadd",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"noise_in_trigger_only": true}': (
        "7c242248a950dd35011b",
        "f61b742766f9d2f50bfb",
        (21, 3, 0, 0, 1, 254, 0, 0, False),
        (21, inf, None),
        "259ae6096bd81497326b",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"recommendation": "with_own_buffer"}': (
        "fcacf9f57121988db733",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"thresholds": "theoretical"}': (
        "fcacf9f57121988db733",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"tree_depth": "reference"}': (
        "df851ecaa98966376b7e",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "67491141b2f9d622cf56",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"lifecycle": "reset_every_phase", "rebuild_local_copies": true}': (
        "be252595c02f4d75ffbe",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 252, False),
        (275, 275.0, 27.5),
        "40babb78440fc8d7f210",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"noise_in_trigger_only": true, "rebuild_local_copies": true}': (
        "e5cc3db03a2be1ecdf54",
        "2e01a5ea88e66828eac7",
        (21, 3, 43, 86, 1, 254, 0, 672, False),
        (64, inf, None),
        "34fb4cb7a18af51c329c",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"merge_same_server": true}': (
        "fcacf9f57121988db733",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"beta_scale": 0.01, "pd_repair": "shift"}': (
        "ac70889e61ab083636f1",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'reference homo-dc {"carry_synchronized_copies": false, "ridge_in_recommendation_only": false}': (
        "c3d3b3266c95b7bf9564",
        "c5c18d6c766c7bf7c6c0",
        (21, 21, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
}
PAPER = {  # fmt: skip
    "faithful cdp-fclub-dc": (
        "d9e7cfe37951e792b3dd",
        "46fb728b30b5d4eecf85",
        (45, 5, 1003, 4012, 1, 1022, 0, 0, False),
        (1048, 1048.0, 104.80000000000001),
        "1a8db8480a9530f3dce9",
        (0, 0),
    ),
    "reference cdp-fclub-dc": (
        "93434dd0943918b0f218",
        "6429c19352b11210713e",
        (45, 45, 25, 0, 1, 1022, 0, 0, False),
        (70, inf, None),
        "3d47880f78065374f44b",
        (0, 70),
    ),
    "faithful fclub-dc": (
        "8ee16b6f24b45525b6a8",
        "a307ccfa421f1c935adf",
        (45, 10, 1022, 2640, 2, 1022, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "reference fclub-dc": (
        "206c88b5bd13dbb46f54",
        "b3696665fd2c180b9575",
        (45, 5, 1022, 0, 1, 1022, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "faithful fclub": (
        "8ee16b6f24b45525b6a8",
        "a307ccfa421f1c935adf",
        (45, 10, 1022, 2640, 2, 1022, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "reference fclub": (
        "64da403c0ae572f06ecc",
        "f07f2089ab50ae084fb0",
        (5110, 35, 1022, 1591, 7, 1022, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "faithful homo-dc": (
        "cddef4655024c6077bac",
        "3d7f4cfd97c4c22b6ffb",
        (45, 5, 950, 3800, 1, 1022, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "reference homo-dc": (
        "d9a9794bb9a0be7fc73c",
        "ee669cde7ea7a2e8dc56",
        (45, 45, 1002, 0, 1, 1022, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "faithful homo": (
        "9d23f2a50fbe69a84d77",
        "66b5b383001f6dbb6654",
        (45, 5, 1022, 4088, 1, 1022, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    "reference homo": (
        "73aabf45e47b08acfc52",
        "b3696665fd2c180b9575",
        (45, 5, 1022, 0, 1, 1022, 0, 0, True),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_runs_match_the_pinned_results(name):
    """12 users in 3 clusters on 3 servers, d = 5, K = 6, T = 254, seed 0."""
    assert set(SMALL) == set(cases())
    preset, variant, options = cases()[name]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="FCLUB: privatizer noise exceeded")
        outcome = run_fclub(config(preset, variant, options, 254), small_env(), 3, seed=0)
    assert fingerprint(outcome) == SMALL[name]


@pytest.mark.parametrize("name", sorted(PAPER))
def test_paper_setting_runs_match_the_pinned_results(name):
    """The paper's synthetic setting (n = 40, m = 4, L = 5, d = K = 10), T = 1022, seed 3."""
    preset, variant = name.split()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="FCLUB: privatizer noise exceeded")
        outcome = run_fclub(config(preset, variant, {"m_bound": 4}, 1022), ClusteredLinearBandit(), 5, seed=3)
    assert fingerprint(outcome) == PAPER[name]


if __name__ == "__main__":  # prints the pins (run from the repository root with the code whose results to pin)
    warnings.filterwarnings("ignore", message="FCLUB: privatizer noise exceeded")
    print("SMALL = {  # fmt: skip")
    for name, (preset, variant, options) in cases().items():
        outcome = run_fclub(config(preset, variant, options, 254), small_env(), 3, seed=0)
        print(f"    {name!r}: {fingerprint(outcome)!r},")
    print("}")
    print("PAPER = {  # fmt: skip")
    for variant in VARIANTS:
        for preset in ("faithful", "reference"):
            outcome = run_fclub(config(preset, variant, {"m_bound": 4}, 1022), ClusteredLinearBandit(), 5, seed=3)
            print(f"    {preset + ' ' + variant!r}: {fingerprint(outcome)!r},")
    print("}")
