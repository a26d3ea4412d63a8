"""A small MULAN-style sparse ARFF file with TMC2007's labels (the P2B data loaders' and reproductions' tests).

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import numpy as np

from privbandits.datasets.multilabel import DATASETS


def tmc_arff(rng: np.random.Generator, n_rows: int, n_features: int) -> str:
    """A sparse MULAN-style file with TMC2007's 22 binary labels after ``n_features`` binary words."""
    n_labels = DATASETS["tmc2007_500"].n_labels
    lines = ["@relation tmc2007_fixture"]
    lines += [f"@attribute word{j} {{0,1}}" for j in range(n_features)]
    lines += [f"@attribute class{j} {{0,1}}" for j in range(n_labels)]
    lines.append("@data")
    for _ in range(n_rows):
        words = np.flatnonzero(rng.random(n_features) < 0.3)
        labels = n_features + np.flatnonzero(rng.random(n_labels) < 0.2)
        lines.append("{" + ",".join(f"{index} 1" for index in np.concatenate((words, labels))) + "}")
    return "\n".join(lines) + "\n"
