"""MediaMill and TMC2007-500 as P2B bandit problems (spec ``p2b.md`` §5.3, §9.12, §9.13).

Reading. The MULAN / scikit-multilearn ARFF files (``mediamill-train.arff``,
``tmc2007-500-test.arff``, …) are read by :func:`load_arff`, a small reader for
what these files use: ``@relation``, ``@attribute`` lines of numeric
(``numeric``, ``real``, ``integer``) or nominal (``{0,1}``) type, and ``@data``
rows that are dense (``v1,v2,…``) or sparse (``{index value,…}``; omitted
entries are 0, for a nominal attribute its first value). Nominal values are
encoded as their index in the declaration, as scikit-multilearn's
``load_from_arff`` does with ``encode_nominal=True``. The labels are the last
``n_labels`` attributes (MULAN) or the first ones (MEKA, ``label_location =
"start"``). Train and test files are concatenated, as in the reference.

Reduction to a bandit (the reference code, §5.3 [R]):

MediaMill (:func:`mediamill_rows`)
    keep labels with more than 100 positives; rank the features by their χ²
    score against each kept label, averaged over labels; the top K (K = number
    of kept labels) are "most relevant", the rest "least relevant"; binarise all
    features at > 0.45; the "context" block is the most relevant columns whose
    sum lies strictly in (9,999, 29,000), the "pref" block the least relevant
    ones with sum > 500; keep labels with more than 450 positives and cluster
    them (their 0/1 columns over the samples) with k-means into |A| = 40 groups;
    the reward of group g is 1 if the sample has any label of g. The context is
    ``concat(context[:, :10], pref)[:, :d]`` with d = 20: on the real data the
    context block has exactly 10 columns and this is the reference's "all
    context columns, then the first d − 10 pref columns"; when the block has
    another size (a stand-in) the same formula still gives d columns, where the
    reference would give d ≠ 20 (more columns) or stop.
TMC2007-500 (:func:`tmc_rows`)
    the context is the top d = 20 features by χ² averaged over all 22 labels;
    the actions are the first 20 labels.

Then (both, :func:`privbandits.datasets.interactions.interactions_from_rows`)
each row is normalised to sum 1 (all-zero rows uniform) and rounded to q = 1
keeping the sum, the rows are shuffled once with a seed (spec §9.12; the
reference cuts the file order) and cut into the reference's numbers of users,
425 (MediaMill, 103 samples each) and 275 (TMC, 103 each).

Offline stand-in (:func:`multilabel_stand_in`). The real files cannot be
downloaded here, so ``sklearn.datasets.make_multilabel_classification`` makes
data of the same shape (MediaMill: 43,907 × 120, 101 labels, about 4 labels a
sample; TMC: 28,596 × 500, 22 labels, about 2) and the same reduction runs on
it, with two documented adaptations, since the generator's features are word
counts, not MediaMill's [0, 1] descriptors or TMC's binary words:

* MediaMill: each count feature is replaced by the fraction of samples with a
  strictly smaller value (its empirical CDF just below it, in [0, 1)), so that
  "binarise at 0.45" means "above the 45 % quantile" and the fixed column-sum
  filters keep a block of columns, as on the real data;
* TMC: a count becomes 1 when positive (word presence, as in TMC2007-500).

The results are a bandit problem with the real data sets' shapes, not their
statistics: the numbers they give are not the paper's.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import NamedTuple

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import make_multilabel_classification

from privbandits.datasets.interactions import REAL, STAND_IN, UserInteractions, interactions_from_rows

NUMERIC_TYPES = ("numeric", "real", "integer")


class LabelLocation(StrEnum):
    """Where the label attributes are in an ARFF file: at the end (MULAN) or the start (MEKA)."""

    END = "end"
    START = "start"


class MultiLabelData(NamedTuple):
    """Features ``(n, F)`` float64, 0/1 labels ``(n, L)`` int8 and their attribute names."""

    features: np.ndarray
    labels: np.ndarray
    feature_names: tuple[str, ...]
    label_names: tuple[str, ...]


@dataclass(frozen=True)
class MultiLabelSpec:
    """A data set's published shape and the reference's bandit settings (spec §5.3, §6)."""

    title: str
    n_samples: int
    n_features: int
    n_labels: int
    label_cardinality: float
    n_users: int
    n_actions: int
    dim: int


DATASETS = {
    "mediamill": MultiLabelSpec("MediaMill", 43_907, 120, 101, 4.376, 425, 40, 20),
    "tmc2007_500": MultiLabelSpec("TMC2007-500", 28_596, 500, 22, 2.158, 275, 20, 20),
}


def _spec(name: str) -> MultiLabelSpec:
    if name not in DATASETS:
        allowed = ", ".join(repr(key) for key in DATASETS)
        raise ValueError(f"name must be one of {allowed}, got {name!r}")
    return DATASETS[name]


# -- ARFF ------------------------------------------------------------------------------------------


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _split_name(path: Path, line_number: int, rest: str) -> tuple[str, str]:
    """``name type`` of an ``@attribute`` line, the name possibly quoted."""
    rest = rest.strip()
    if rest[:1] in ("'", '"'):
        end = rest.find(rest[0], 1)
        if end < 0:
            raise ValueError(f"{path} line {line_number}: unterminated quoted attribute name")
        return rest[1:end], rest[end + 1 :].strip()
    name, _, kind = rest.partition(" ") if " " in rest else rest.partition("\t")
    return name, kind.strip()


def _attribute_decoder(path: Path, line_number: int, kind: str):
    """``str -> float`` for a numeric attribute, or the value → index map of a nominal one."""
    if kind.lower() in NUMERIC_TYPES:
        return float
    if kind.startswith("{") and kind.endswith("}"):
        values = [_unquote(value) for value in kind[1:-1].split(",")]
        return {value: float(index) for index, value in enumerate(values)}.__getitem__
    raise ValueError(
        f"{path} line {line_number}: attribute type {kind!r} is not supported (numeric, real, integer or {{nominal}})"
    )


def _read_arff(path: Path) -> tuple[list[str], np.ndarray]:
    """Attribute names and the encoded data matrix of one ARFF file."""
    if not path.is_file():
        raise FileNotFoundError(f"ARFF file {path} does not exist")
    names, decoders, rows = [], [], []
    in_data = False
    with path.open(encoding="utf-8") as handle:
        for line_number, raw in enumerate(handle, start=1):
            line = raw.strip()
            if not line or line.startswith("%"):
                continue
            if not in_data:
                keyword, *rest = line.split(maxsplit=1)
                keyword, argument = keyword.lower(), rest[0] if rest else ""
                if keyword == "@attribute":
                    name, kind = _split_name(path, line_number, argument)
                    names.append(name)
                    decoders.append(_attribute_decoder(path, line_number, kind))
                elif keyword == "@data":
                    in_data = True
                elif keyword != "@relation":
                    raise ValueError(
                        f"{path} line {line_number}: expected @relation, @attribute or @data, got {line!r}"
                    )
                continue
            rows.append(_parse_row(path, line_number, line, decoders))
    if not in_data:
        raise ValueError(f"{path} has no @data section")
    if not rows:
        raise ValueError(f"{path} has no data rows")
    return names, np.array(rows)


def _decode(path: Path, line_number: int, decoder, value: str, index: int) -> float:
    value = _unquote(value)
    if value == "?":
        raise ValueError(
            f"{path} line {line_number}: attribute {index} is missing ('?'); missing values are not supported"
        )
    try:
        return decoder(value)
    except (KeyError, ValueError):
        raise ValueError(f"{path} line {line_number}: bad value {value!r} for attribute {index}") from None


def _parse_row(path: Path, line_number: int, line: str, decoders: list) -> list[float]:
    width = len(decoders)
    if line.startswith("{"):
        if not line.endswith("}"):
            raise ValueError(f"{path} line {line_number}: a sparse row must end with '}}'")
        row = [0.0] * width
        body = line[1:-1].strip()
        for entry in body.split(",") if body else []:
            try:
                index_text, value = entry.split()
                index = int(index_text)
            except ValueError:
                raise ValueError(f"{path} line {line_number}: bad sparse entry {entry.strip()!r}") from None
            if not 0 <= index < width:
                raise ValueError(f"{path} line {line_number}: sparse index {index} is not in [0, {width})")
            row[index] = _decode(path, line_number, decoders[index], value, index)
        return row
    values = line.split(",")
    if len(values) != width:
        raise ValueError(f"{path} line {line_number} has {len(values)} values, expected {width}")
    return [
        _decode(path, line_number, decoder, value, index)
        for index, (decoder, value) in enumerate(zip(decoders, values, strict=True))
    ]


def load_arff(
    paths: str | Path | Sequence[str | Path],
    n_labels: int,
    *,
    label_location: LabelLocation | str = LabelLocation.END,
) -> MultiLabelData:
    """Read one or more multi-label ARFF files (e.g. train then test) into one data set.

    Parameters
    ----------
    paths : path or sequence of paths
        Files with identical attribute lists; their rows are concatenated in order.
    n_labels : int
        Number of label attributes (101 for MediaMill, 22 for TMC2007-500).
    label_location : {"end", "start"}
        Labels are the last (MULAN) or first (MEKA) ``n_labels`` attributes.
    """
    try:
        location = LabelLocation(label_location)
    except ValueError:
        allowed = ", ".join(repr(member.value) for member in LabelLocation)
        raise ValueError(f"label_location must be one of {allowed}, got {label_location!r}") from None
    files = [Path(paths)] if isinstance(paths, str | Path) else [Path(path) for path in paths]
    if not files:
        raise ValueError("paths must name at least one ARFF file")
    names, first = _read_arff(files[0])
    blocks = [first]
    for path in files[1:]:
        file_names, data = _read_arff(path)
        if file_names != names:
            raise ValueError(f"{path} declares other attributes than {files[0]}")
        blocks.append(data)
    if not 1 <= n_labels < len(names):
        raise ValueError(
            f"n_labels must be in [1, {len(names) - 1}] (the file has {len(names)} attributes), got {n_labels}"
        )
    data = np.concatenate(blocks)
    labels_at = slice(len(names) - n_labels, None) if location is LabelLocation.END else slice(0, n_labels)
    features_at = slice(0, len(names) - n_labels) if location is LabelLocation.END else slice(n_labels, None)
    labels = data[:, labels_at]
    if not np.isin(labels, (0.0, 1.0)).all():
        raise ValueError(f"the {n_labels} label attributes must be 0 or 1; check n_labels and label_location")
    return MultiLabelData(
        features=data[:, features_at],
        labels=labels.astype(np.int8),
        feature_names=tuple(names[features_at]),
        label_names=tuple(names[labels_at]),
    )


# -- Reduction ------------------------------------------------------------------------------------


def chi2_relevance(features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Every feature's χ² score against each label, averaged over the labels (shape (F,)).

    Per label this is ``sklearn.feature_selection.chi2`` (the two classes'
    observed vs expected feature sums), computed for all labels at once; a
    0/0 term (a feature that is never non-zero, or a constant label) counts as
    0 where scikit-learn gives NaN. Features must be non-negative.
    """
    features = np.asarray(features, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    if (features < 0).any():
        raise ValueError("features must be non-negative for the chi-squared score")
    totals = features.sum(axis=0)
    positive_share = labels.mean(axis=0)[:, None]
    observed_positive = labels.T @ features
    terms = np.zeros((2,) + observed_positive.shape)
    for index, (observed, share) in enumerate(
        ((observed_positive, positive_share), (totals - observed_positive, 1.0 - positive_share))
    ):
        expected = share * totals
        np.divide((observed - expected) ** 2, expected, out=terms[index], where=expected > 0)
    return terms.sum(axis=0).mean(axis=0)


def top_features(scores: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` highest scores (ties to the lower index), in ascending index order."""
    order = np.lexsort((np.arange(scores.size), -scores))
    return np.sort(order[:count])


def cluster_labels(labels: np.ndarray, n_groups: int, seed: int = 0) -> list[np.ndarray]:
    """Groups of labels from k-means on the label columns (``MatrixLabelSpaceClusterer``, spec §5.3).

    Each label is the point ``labels[:, j]`` in ℝ^n; ``KMeans(n_groups,
    n_init=10, random_state=seed)`` clusters them, run on coordinates
    of the columns taken from their Gram matrix (the same pairwise distances, so
    the same clustering up to rounding, at a fraction of the cost). Groups are
    ordered by their smallest label index.
    """
    if not 1 <= n_groups <= labels.shape[1]:
        raise ValueError(f"n_groups must be in [1, {labels.shape[1]}] (the number of labels), got {n_groups}")
    # Coordinates with the columns' Gram matrix (G = V diag(λ) V^T, points V √λ): the same pairwise
    # distances, so the same clustering, with L instead of n coordinates.
    columns = labels.astype(np.float64)
    eigenvalues, eigenvectors = np.linalg.eigh(columns.T @ columns)
    points = eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None))
    assignment = KMeans(n_clusters=n_groups, n_init=10, random_state=seed).fit_predict(points)
    # scikit-learn's k-means relocates empty clusters, so every group has a label
    return sorted((np.flatnonzero(assignment == group) for group in range(n_groups)), key=lambda group: group[0])


def mediamill_rows(
    data: MultiLabelData,
    *,
    n_actions: int = 40,
    dim: int = 20,
    label_min_positives: int = 100,
    threshold: float = 0.45,
    context_sum_range: tuple[float, float] = (9_999, 29_000),
    pref_min_sum: float = 500,
    action_min_positives: int = 450,
    context_block: int = 10,
    cluster_seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """The reference MediaMill reduction (module docstring): binary contexts (N, dim) and OR-rewards (N, n_actions).

    The defaults are the reference's; the thresholds are parameters so the
    reduction can be checked on small data.
    """
    features, labels = data.features, data.labels
    frequent = labels[:, labels.sum(axis=0) > label_min_positives]
    if frequent.shape[1] == 0:
        raise ValueError(f"no label has more than label_min_positives={label_min_positives} positives")
    relevant = top_features(chi2_relevance(features, frequent), frequent.shape[1])
    less_relevant = np.setdiff1d(np.arange(features.shape[1]), relevant)
    binary = (features > threshold).astype(np.float64)
    context, pref = binary[:, relevant], binary[:, less_relevant]
    low, high = context_sum_range
    context_sums, pref_sums = context.sum(axis=0), pref.sum(axis=0)
    context = context[:, (context_sums > low) & (context_sums < high)]
    pref = pref[:, pref_sums > pref_min_sum]
    columns = np.concatenate((context[:, :context_block], pref), axis=1)
    if columns.shape[1] < dim:
        raise ValueError(
            f"dim must be <= {columns.shape[1]}, the context columns left after the filters "
            f"({min(context.shape[1], context_block)} context + {pref.shape[1]} pref), got {dim}"
        )
    actions = frequent[:, frequent.sum(axis=0) > action_min_positives]
    if actions.shape[1] < n_actions:
        raise ValueError(
            f"n_actions must be <= {actions.shape[1]}, the labels with more than "
            f"action_min_positives={action_min_positives} positives, got {n_actions}"
        )
    groups = cluster_labels(actions, n_actions, cluster_seed)
    rewards = np.stack([actions[:, group].max(axis=1) for group in groups], axis=1)
    return columns[:, :dim], rewards.astype(np.int8)


def tmc_rows(data: MultiLabelData, *, n_actions: int = 20, dim: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """The reference TMC2007-500 reduction: the top-``dim`` χ² features (N, dim) and the first ``n_actions`` labels."""
    features, labels = data.features, data.labels
    if not 1 <= dim <= features.shape[1]:
        raise ValueError(f"dim must be in [1, {features.shape[1]}] (the number of features), got {dim}")
    if not 1 <= n_actions <= labels.shape[1]:
        raise ValueError(f"n_actions must be in [1, {labels.shape[1]}] (the number of labels), got {n_actions}")
    relevant = top_features(chi2_relevance(features, labels), dim)
    return features[:, relevant], labels[:, :n_actions].astype(np.int8)


def _bandit(
    name: str,
    data: MultiLabelData,
    source: str,
    n_users: int | None,
    decimals: int | None,
    shuffle_seed: int | None,
    options: dict,
) -> UserInteractions:
    spec = _spec(name)
    reduce = mediamill_rows if name == "mediamill" else tmc_rows
    contexts, rewards = reduce(data, **options)
    return interactions_from_rows(
        contexts,
        rewards,
        spec.n_users if n_users is None else n_users,
        name=name,
        source=source,
        decimals=decimals,
        shuffle_seed=shuffle_seed,
    )


def multilabel_interactions(
    name: str,
    paths: str | Path | Sequence[str | Path],
    *,
    n_users: int | None = None,
    decimals: int | None = 1,
    shuffle_seed: int | None = 0,
    label_location: LabelLocation | str = LabelLocation.END,
    **options,
) -> UserInteractions:
    """MediaMill or TMC2007-500 from local ARFF files as P2B users (module docstring).

    Parameters
    ----------
    name : {"mediamill", "tmc2007_500"}
    paths : path or sequence of paths
        The data set's ARFF file(s), e.g. ``[train.arff, test.arff]``.
    n_users : int or None
        U; None: the reference's 425 (MediaMill) or 275 (TMC).
    decimals : int or None
        q, the context precision (1).
    shuffle_seed : int or None
        Seed of the one shuffle of the rows; None keeps the file order (reference).
    label_location : {"end", "start"}
    **options
        Passed to :func:`mediamill_rows` or :func:`tmc_rows` (``n_actions``, ``dim``, …).
    """
    spec = _spec(name)
    data = load_arff(paths, spec.n_labels, label_location=label_location)
    files = ", ".join(str(path) for path in ([paths] if isinstance(paths, str | Path) else paths))
    return _bandit(name, data, f"{REAL}: {spec.title} from {files}", n_users, decimals, shuffle_seed, options)


@functools.lru_cache(maxsize=2)
def stand_in_data(name: str, seed: int = 0) -> MultiLabelData:
    """Generated data with the real data set's shape, features adapted as the module docstring says.

    The last two are kept for the process (both data sets of one seed), read-only: each figure, test and config kind
    that asked for them generated them again."""
    spec = _spec(name)
    counts, labels = make_multilabel_classification(
        n_samples=spec.n_samples,
        n_features=spec.n_features,
        n_classes=spec.n_labels,
        n_labels=round(spec.label_cardinality),
        length=spec.n_features if name == "mediamill" else 50,
        random_state=seed,
    )
    if name == "mediamill":
        features = np.empty_like(counts)
        for column in range(counts.shape[1]):
            values = counts[:, column]
            features[:, column] = np.searchsorted(np.sort(values), values, side="left") / values.size
    else:
        features = (counts > 0).astype(np.float64)
    labels = labels.astype(np.int8)
    features.flags.writeable = labels.flags.writeable = False
    return MultiLabelData(
        features=features,
        labels=labels,
        feature_names=tuple(f"feature{j}" for j in range(spec.n_features)),
        label_names=tuple(f"label{j}" for j in range(spec.n_labels)),
    )


def multilabel_stand_in(
    name: str,
    seed: int = 0,
    *,
    n_users: int | None = None,
    decimals: int | None = 1,
    shuffle_seed: int | None = 0,
    **options,
) -> UserInteractions:
    """The offline stand-in for MediaMill or TMC2007-500 (module docstring), through the same reduction.

    ``seed`` drives the generator; the other arguments are those of
    :func:`multilabel_interactions`.
    """
    spec = _spec(name)
    adaptation = (
        "features replaced by their empirical CDF in [0, 1)" if name == "mediamill" else "features binarised (> 0)"
    )
    source = (
        f"{STAND_IN} (sklearn make_multilabel_classification, seed {seed}, with {spec.title}'s shape "
        f"{spec.n_samples} x {spec.n_features}, {spec.n_labels} labels; {adaptation}); NOT the real {spec.title}"
    )
    return _bandit(name, stand_in_data(name, seed), source, n_users, decimals, shuffle_seed, options)
