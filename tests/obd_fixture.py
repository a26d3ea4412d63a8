"""A small Open Bandit Dataset campaign folder in the real files' format (the loaders' and ``data fetch obd``'s tests).

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import shutil
from pathlib import Path

import numpy as np


def hashed(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def write_obd(folder: Path, rng: np.random.Generator, n_events: int = 300, n_items: int = 6) -> dict:
    """An OBD campaign folder in the real files' format; returns what was written."""
    folder.mkdir(parents=True, exist_ok=True)
    items = {
        "item_feature_0": rng.normal(size=n_items),
        "item_feature_1": [hashed(f"brand{k % 3}") for k in range(n_items)],
        "item_feature_2": [hashed(f"shop{k % 2}") for k in range(n_items)],
        "item_feature_3": [hashed(f"type{min(k, 3)}") for k in range(n_items)],
    }
    item_order = rng.permutation(n_items)  # rows need not be sorted by item_id
    with (folder / "item_context.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["", "item_id", *items])
        for row, k in enumerate(item_order):
            writer.writerow([row, k, repr(float(items["item_feature_0"][k])), *(items[c][k] for c in list(items)[1:])])
    users = {
        "user_feature_0": rng.choice([hashed("m"), hashed("f")], size=n_events),
        "user_feature_1": rng.choice([hashed("young"), hashed("old")], size=n_events, p=[0.7, 0.3]),
        "user_feature_2": [hashed("rare") if t == 0 else hashed(f"g{t % 3}") for t in range(n_events)],
        "user_feature_3": rng.choice([hashed(f"h{j}") for j in range(4)], size=n_events),
    }
    events = {
        "item_id": rng.integers(n_items, size=n_events),
        "position": rng.integers(1, 4, size=n_events),
        "click": (rng.random(n_events) < 0.2).astype(int),
    }
    with (folder / "all.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        affinity = [f"user-item_affinity_{k}" for k in range(n_items)]
        writer.writerow(["", "timestamp", "item_id", "position", "click", "propensity_score", *users, *affinity])
        for t in range(n_events):
            writer.writerow(
                [t, f"2019-11-24 00:00:{t % 60:02d}+00:00", events["item_id"][t], events["position"][t]]
                + [events["click"][t], 1 / n_items, *(users[c][t] for c in users), *(["0.0"] * n_items)]
            )
    return {"items": items, "users": users, **events}


def sample_head(sample: Path, folder: Path, n_events: int) -> Path:
    """``folder`` holding the OBD campaign folder ``sample``'s item file and its first ``n_events`` events: the real
    files' rows, for tests whose checks hold on any number of events."""
    folder.mkdir(parents=True)
    shutil.copyfile(sample / "item_context.csv", folder / "item_context.csv")
    with (sample / "all.csv").open() as source, (folder / "all.csv").open("w") as head:
        head.writelines(itertools.islice(source, n_events + 1))  # the header, then the events
    return folder
