"""The Open Bandit Dataset (Saito et al. 2021) and its vertical split between two parties.

The ``random`` campaign logs ZOZOTOWN fashion recommendations chosen uniformly at
random among the items, so the replay method (Li et al. 2011) evaluates a policy
on it without bias (spec ``vertical-o3m.md`` §8.4.17). A campaign folder holds

``all.csv``
    one row per impression slot: ``timestamp, item_id, position, click,
    propensity_score``, four hashed categorical user features
    ``user_feature_0..3`` and 80 ``user-item_affinity_<item>`` columns;
``item_context.csv``
    one row per item: ``item_id``, numeric ``item_feature_0`` and hashed
    categorical ``item_feature_1..3``.

The user-item affinity columns are not loaded. They are counts the platform
derives from each user's past interactions with each item, so in a vertical
split they are the active party's data, not another organisation's; and in the
10,000-row sample 99.94 % of them are zero (502 non-zero entries, on 448 rows),
too sparse to be a usable feature.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import numpy as np

from privbandits.datasets.logged import EventContexts, LoggedBanditData, collect_columns

EVENTS_FILE = "all.csv"
ITEMS_FILE = "item_context.csv"
USER_COLUMNS = tuple(f"user_feature_{j}" for j in range(4))
ITEM_CATEGORICAL_COLUMNS = tuple(f"item_feature_{j}" for j in range(1, 4))
ITEM_NUMERIC_COLUMN = "item_feature_0"
EVENT_COLUMNS = ("item_id", "position", "click", "propensity_score", *USER_COLUMNS)
OTHER = "other"


CAMPAIGN = ("random", "all")
"""The campaign folder of the sample the reproductions and examples replay (the uniformly random log)."""


def default_obd_path() -> Path | None:
    """The OBD sample's ``obd/random/all``: in the offline data (:func:`~privbandits.datasets.cache.shared_data`:
    ``$PRIVBANDITS_SHARED_DATA``, else ``../shared/data`` beside a checkout), else in the data cache
    (``privbandits data fetch obd``; its files' checksums checked), else None."""
    from privbandits.datasets import cache

    path = cache.shared_data("obd", *CAMPAIGN)
    if path is not None and path.is_dir():
        return path
    if cache.is_cached("obd"):
        return cache.cached_folder("obd").joinpath(*CAMPAIGN)
    return None


def missing_sample() -> str:
    """The one line saying how to get the OBD sample when :func:`default_obd_path` finds none."""
    from privbandits.datasets.cache import SHARED_ENV, fetch_command

    return (
        f"the Open Bandit Dataset sample is absent: run `{fetch_command('obd')}` to fetch it (a 1.3 MB package "
        f"from PyPI, checksums pinned), or set ${SHARED_ENV} to a folder holding obd/{'/'.join(CAMPAIGN)}"
    )


def _read_columns(path: Path, columns: tuple[str, ...]) -> tuple[dict[str, list[str]], int]:
    """The named columns of a CSV file with a header row, as lists of strings."""
    if not path.is_file():
        raise FileNotFoundError(f"OBD file {path} does not exist")
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path} is empty; expected a header row")
        missing = [column for column in columns if column not in header]
        if missing:
            raise ValueError(f"{path} has no column {missing[0]!r}; required columns: {', '.join(columns)}")
        where = [header.index(column) for column in columns]
        values, rows = collect_columns(reader, columns, where, width=len(header), path=path, first_line=2)
    return values, rows


def _parse(path: Path, column: str, values: list[str], kind: type) -> np.ndarray:
    """A column parsed as ``int`` or ``float``; a bad value is reported with its line."""
    parsed = np.empty(len(values), dtype=np.int64 if kind is int else np.float64)
    for row, value in enumerate(values):
        try:
            parsed[row] = kind(value)
        except ValueError:
            name = "an integer" if kind is int else "a number"
            raise ValueError(f"{path} line {row + 2}: {column} must be {name}, got {value!r}") from None
    return parsed


def one_hot(values: list[str], column: str, min_count: int = 1) -> tuple[np.ndarray, list[str]]:
    """One-hot encode a categorical column, grouping rare categories.

    Categories seen fewer than ``min_count`` times share one ``"<column>=other"``
    indicator. Columns are ordered by decreasing frequency (ties by value), the
    "other" bucket last; names are ``"<column>=<value>"``.
    """
    counts = Counter(values)
    common = sorted((value for value, count in counts.items() if count >= min_count), key=lambda v: (-counts[v], v))
    names = [f"{column}={value}" for value in common]
    has_other = len(common) < len(counts)
    if has_other:
        names.append(f"{column}={OTHER}")
    position = {value: index for index, value in enumerate(common)}
    other = len(common)
    codes = np.array([position.get(value, other) for value in values], dtype=np.int64)
    matrix = np.zeros((len(values), len(names)))
    matrix[np.arange(len(values)), codes] = 1.0
    return matrix, names


def _item_features(folder: Path) -> tuple[np.ndarray, list[str]]:
    """Standardised ``item_feature_0`` and one-hot ``item_feature_1..3``, rows in item_id order."""
    path = folder / ITEMS_FILE
    columns, n_items = _read_columns(path, ("item_id", ITEM_NUMERIC_COLUMN, *ITEM_CATEGORICAL_COLUMNS))
    item_ids = _parse(path, "item_id", columns["item_id"], int)
    if sorted(item_ids.tolist()) != list(range(n_items)):
        raise ValueError(f"{path}: item_id must number the {n_items} items 0..{n_items - 1}, each once")
    order = np.argsort(item_ids)
    numeric = _parse(path, ITEM_NUMERIC_COLUMN, columns[ITEM_NUMERIC_COLUMN], float)[order]
    if not np.isfinite(numeric).all():
        raise ValueError(f"{path}: {ITEM_NUMERIC_COLUMN} must be finite")
    spread = numeric.std()
    blocks, names = [((numeric - numeric.mean()) / (spread if spread > 0 else 1.0))[:, None]], [ITEM_NUMERIC_COLUMN]
    for column in ITEM_CATEGORICAL_COLUMNS:
        matrix, column_names = one_hot([columns[column][i] for i in order], column)
        blocks.append(matrix)
        names += column_names
    return np.hstack(blocks), names


def load_obd(
    folder: str | Path,
    *,
    position: int | None = None,
    min_category_share: float = 0.01,
) -> LoggedBanditData:
    """Load one Open Bandit Dataset campaign folder (``all.csv`` + ``item_context.csv``).

    Parameters
    ----------
    folder : str or Path
        E.g. ``.../obd/random/all`` (see :func:`default_obd_path`).
    position : int or None
        Keep only the events shown in this slot (numbered as in the file, 1 = top);
        None keeps all slots, each slot's row being one event.
    min_category_share : float in [0, 1)
        User-feature categories seen in fewer than this share of the kept events
        are grouped into one "other" indicator per feature.

    Returns
    -------
    LoggedBanditData
        ``actions`` = item_id, ``rewards`` = click, with propensities and positions.
        User features: the four hashed categoricals one-hot encoded (rare ones
        grouped); on the 10,000-row sample with the default share this gives
        d_u = 3 + 5 + 8 + 7 = 23. Item features (80 rows): ``item_feature_0``
        standardised over the items, then one-hot ``item_feature_1..3`` (no
        grouping): d_i = 1 + 12 + 21 + 7 = 41.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"OBD folder {folder} does not exist")
    if not 0.0 <= min_category_share < 1.0:
        raise ValueError(f"min_category_share must be in [0, 1), got {min_category_share}")
    item_features, item_names = _item_features(folder)
    n_items = item_features.shape[0]

    path = folder / EVENTS_FILE
    columns, _ = _read_columns(path, EVENT_COLUMNS)
    actions = _parse(path, "item_id", columns["item_id"], int)
    bad = np.flatnonzero((actions < 0) | (actions >= n_items))
    if bad.size:
        raise ValueError(
            f"{path} line {bad[0] + 2}: item_id {actions[bad[0]]} is not in {ITEMS_FILE} (items 0..{n_items - 1})"
        )
    clicks = _parse(path, "click", columns["click"], int)
    bad = np.flatnonzero((clicks != 0) & (clicks != 1))
    if bad.size:
        raise ValueError(f"{path} line {bad[0] + 2}: click must be 0 or 1, got {clicks[bad[0]]}")
    propensities = _parse(path, "propensity_score", columns["propensity_score"], float)
    bad = np.flatnonzero(~((propensities > 0) & (propensities <= 1)))
    if bad.size:
        raise ValueError(f"{path} line {bad[0] + 2}: propensity_score must be in (0, 1], got {propensities[bad[0]]}")
    positions = _parse(path, "position", columns["position"], int)

    keep = np.arange(actions.size)
    if position is not None:
        present = sorted(set(positions.tolist()))
        if position not in present:
            allowed = ", ".join(str(p) for p in present)
            raise ValueError(f"position must be one of {allowed} (the slots in {EVENTS_FILE}) or None, got {position}")
        keep = np.flatnonzero(positions == position)

    min_count = int(np.ceil(min_category_share * keep.size))
    user_blocks, user_names = [], []
    for column in USER_COLUMNS:
        matrix, names = one_hot([columns[column][i] for i in keep], column, min_count)
        user_blocks.append(matrix)
        user_names += names
    return LoggedBanditData(
        user_features=np.hstack(user_blocks),
        item_features=item_features,
        actions=actions[keep],
        rewards=clicks[keep].astype(np.float64),
        propensities=propensities[keep],
        positions=positions[keep],
        user_feature_names=tuple(user_names),
        item_feature_names=tuple(item_names),
    )


def vertical_obd_contexts(
    data: LoggedBanditData,
    *,
    descriptor: str | tuple[str, ...] = ("item_feature_3",),
) -> EventContexts:
    """Per-arm contexts split between the platform and a user-data holder.

    Block 1, the active party (the platform: it owns the catalogue, serves the
    users and sees the clicks): the item features of each arm, ``d_1 = d_i``.

    Block 2, the passive party (another organisation holding the user features;
    the item descriptor is public, sent to it once at setup): the interaction
    ``vec(descriptor(a) ⊗ user)``, i.e. every product of a descriptor column of
    arm a with a user feature, ``d_2 = d_desc · d_u``, ordered descriptor-major.

    Why an interaction and not the user features themselves: all arms share one
    θ, so a user block ``u`` that is the same for every arm adds the same ``θ_u^T u``
    to every arm's score and can never change which arm is chosen. The "outer
    addition" ``x[p, q] = u_p + i_q`` of the vertical paper's Criteo setup has
    the same flaw, being separable: ``Σ θ_pq (u_p + i_q) = Σ_p u_p (Σ_q θ_pq) +
    Σ_q i_q (Σ_p θ_pq)``, an arm-independent term plus an item-only term. Only
    an arm-dependent function of the user, such as ``θ_2^T vec(desc(a) ⊗ u) =
    desc(a)^T Θ u``, lets the other party's data personalise the ranking.

    With the defaults on the OBD sample (d_i = 41, the 7 categories of
    ``item_feature_3``, d_u = 23): partition ``(41, 161)``, d = 202.

    Parameters
    ----------
    data : LoggedBanditData
        From :func:`load_obd`.
    descriptor : str or tuple of str
        Source item features forming the public descriptor: each selects the
        item feature column of that name or its one-hot columns ``"<name>=..."``.
    """
    if isinstance(descriptor, str):
        descriptor = (descriptor,)
    names = data.item_feature_names
    sources = [name.split("=", 1)[0] for name in names]
    allowed = ", ".join(dict.fromkeys(sources))
    if not descriptor:
        raise ValueError(f"descriptor must name at least one item feature among {allowed}")
    for source in descriptor:
        if source not in sources:
            raise ValueError(f"descriptor must name item features among {allowed}, got {source!r}")
    selected = [index for index, source in enumerate(sources) if source in descriptor]
    items, users = data.item_features, data.user_features
    desc = items[:, selected]
    n_arms, n_desc = desc.shape

    def build(event: int) -> np.ndarray:
        interaction = (desc[:, :, None] * users[event]).reshape(n_arms, -1)
        return np.concatenate((items, interaction), axis=1)

    interaction_names = [f"{names[i]}*{user}" for i in selected for user in data.user_feature_names]
    return EventContexts(
        build=build,
        n_events=data.n_events,
        n_arms=n_arms,
        partition=(items.shape[1], n_desc * users.shape[1]),
        feature_names=(*names, *interaction_names),
    )
