# ruff: noqa: E501 (the pinned cases' names are long)
"""FCLUB's results pinned bit for bit: regret and communication per round, the communication counts, the privacy
ledger's totals, the privacy report and the numerical repairs of every variant (FCLUB-DC, FCLUB, CDP-FCLUB-DC, Homo,
Homo-DC), in the faithful and the reference-compatible presets, with the issue-15 options on and off.

The pins were captured from the code before the parties learned only from messages (issue 17 step 1, commit
d68b9cf): making the message boundary real must not move a single result. A change that moves results on purpose
regenerates them (the fingerprint below, printed for every case) and says why in its commit. Moved on purpose since:
the three faithful CDP-FCLUB-DC cases with ``rebuild_local_copies`` (regret and privacy report), when the noise
chain stopped restarting at H̃ with privatized uploads (the first upload after a phase start had gone out raw);
every CDP-FCLUB-DC case (issue 31: its noise drawn by privacy/noise.py's discrete Gaussian, its data clipped to
‖x‖ ≤ 1, |y| ≤ 1, and the reference preset's report claiming ε = ∞). No non-private case moved.

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
        "3ee3ae855280270767ff",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"merge_rule": "reference"}': (
        "8e16a9fb08b1b45c10d2",
        "39a7ca7d4c4a4d848810",
        (21, 3, 254, 0, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"rebuild_local_copies": true}': (
        "257945ffc4d69dbca128",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 252, False),
        (275, 275.0, 27.5),
        "159e63d046ed22aa915f",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"renew_every_phase": true}': (
        "aa34679b53e7e1c67077",
        "b15743288b18e57aca21",
        (21, 21, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "487d502624d39e6ff796",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"shared_statistics_defect": true}': (
        "f0efe9a20373a579c3a5",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 4, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"merge_rule": "reference", "rebuild_local_copies": true, "renew_every_phase": true, "shared_statistics_defect": true}': (
        "d78013bc74e4626a2b01",
        "c5c18d6c766c7bf7c6c0",
        (21, 21, 254, 0, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "ab7ddf790a40dc036c8d",
        (0, 0),
    ),
    "reference cdp-fclub-dc {}": (
        "90d7ecf776fe4b1e3eac",
        "be306cda99ba91b52c1a",
        (21, 21, 15, 0, 1, 254, 0, 0, False),
        (36, inf, None),
        "c94c119eff13458985b2",
        (0, 36),
    ),
    'reference cdp-fclub-dc {"merge_rule": "components"}': (
        "c6ed08232f1f13829325",
        "e64ad59a2af3fedf85cd",
        (21, 21, 15, 30, 1, 254, 30, 0, False),
        (36, inf, None),
        "c94c119eff13458985b2",
        (0, 36),
    ),
    'reference cdp-fclub-dc {"rebuild_local_copies": true}': (
        "98f70683221565a268b1",
        "09a6d09b655da7b784e7",
        (21, 3, 35, 0, 1, 254, 0, 0, False),
        (56, inf, None),
        "0cb8d4ad6b880afec751",
        (0, 59),
    ),
    'reference cdp-fclub-dc {"shared_statistics_defect": false}': (
        "98f70683221565a268b1",
        "be306cda99ba91b52c1a",
        (21, 21, 15, 0, 1, 254, 0, 0, False),
        (36, inf, None),
        "c94c119eff13458985b2",
        (0, 36),
    ),
    'reference cdp-fclub-dc {"renew_every_phase": true}': (
        "90d7ecf776fe4b1e3eac",
        "be306cda99ba91b52c1a",
        (21, 21, 15, 0, 1, 254, 0, 0, False),
        (36, inf, None),
        "c94c119eff13458985b2",
        (0, 36),
    ),
    'reference cdp-fclub-dc {"merge_rule": "components", "shared_statistics_defect": false}': (
        "f68ca13351e8d0d3a700",
        "e64ad59a2af3fedf85cd",
        (21, 21, 15, 30, 1, 254, 0, 0, False),
        (36, inf, None),
        "c94c119eff13458985b2",
        (0, 36),
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
        "c3d3b3266c95b7bf9564",
        "c5c18d6c766c7bf7c6c0",
        (21, 21, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo-dc {"merge_rule": "components"}': (
        "c0c8fa356fa0846280e0",
        "5bfeb7e8f5bd89ebc4d9",
        (21, 21, 253, 506, 1, 254, 506, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo-dc {"rebuild_local_copies": true}': (
        "c3d3b3266c95b7bf9564",
        "c5c18d6c766c7bf7c6c0",
        (21, 21, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo-dc {"shared_statistics_defect": false}': (
        "7553f148bc4d6ce435b1",
        "c5c18d6c766c7bf7c6c0",
        (21, 21, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo-dc {"renew_every_phase": false}': (
        "8ca8d5e42b4cefc14f43",
        "39a7ca7d4c4a4d848810",
        (21, 3, 254, 0, 1, 254, 0, 0, False),
        (0, 0.0, 0.0),
        "dc937b59892604f5a86a",
        (0, 0),
    ),
    'reference homo-dc {"merge_rule": "components", "shared_statistics_defect": false}': (
        "02fbe8003aec4f8af5e2",
        "b15743288b18e57aca21",
        (21, 21, 254, 508, 1, 254, 0, 0, False),
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
        "c740b45fd2bbbc88d71d",
        "b15743288b18e57aca21",
        (21, 21, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "eec458934f279c8cdadd",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"noise_in_trigger_only": true}': (
        "f9e2dd3aee3ae5202d19",
        "08009f83ba438dd68498",
        (21, 3, 7, 14, 1, 254, 0, 0, False),
        (28, inf, None),
        "61204c689e554f3d149d",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"recommendation": "with_own_buffer"}': (
        "3ee3ae855280270767ff",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"thresholds": "theoretical"}': (
        "3ee3ae855280270767ff",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"tree_depth": "reference"}': (
        "c00093bb7b80c127a142",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "67491141b2f9d622cf56",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"lifecycle": "reset_every_phase", "rebuild_local_copies": true}': (
        "ede20049019b05e519e1",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 252, False),
        (275, 275.0, 27.5),
        "40babb78440fc8d7f210",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"noise_in_trigger_only": true, "rebuild_local_copies": true}': (
        "88ad4ccab72f859d6b92",
        "c6d035d39539da83b387",
        (21, 3, 24, 48, 1, 254, 0, 712, False),
        (45, inf, None),
        "2dceebf33dfb6efb5249",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"merge_same_server": true}': (
        "3ee3ae855280270767ff",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
    'faithful cdp-fclub-dc {"beta_scale": 0.01, "pd_repair": "shift"}': (
        "fb30e90bc1bf04cc9155",
        "35dc9a997e0558b80c7a",
        (21, 3, 254, 508, 1, 254, 0, 0, False),
        (275, 275.0, 27.5),
        "b2cd537c5cdc45829850",
        (0, 0),
    ),
}
PAPER = {  # fmt: skip
    "faithful cdp-fclub-dc": (
        "259d541322eccf738d6b",
        "a5e15011375b4568fc29",
        (45, 5, 1002, 4008, 1, 1022, 0, 0, False),
        (1047, 1047.0, 104.7),
        "d33bea72c84a4958df0f",
        (0, 0),
    ),
    "reference cdp-fclub-dc": (
        "1ad3021d03f2a8f00d52",
        "e0c80cfa8e8063d23349",
        (45, 45, 25, 0, 1, 1022, 0, 0, False),
        (70, inf, None),
        "3188a2304858e8a0b288",
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
        "24891206e717c279baac",
        "ce3e0d3886cfb23d9136",
        (45, 45, 1022, 0, 1, 1022, 0, 0, False),
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
