"""The Open Bandit Dataset sample as :class:`~privbandits.logs.LoggedFeedback`.

Through :func:`privbandits.datasets.load_obd` (its checks, its encoding): ``context`` = the one-hot
user features, ``action_context`` = the item features, ``action`` = ``item_id``, ``reward`` = ``click``,
``pscore`` = ``propensity_score``, ``position`` = the slot numbered from 0 (OBP's convention; the file
numbers from 1), ``timestamp`` = the file's times in ISO 8601 UTC (``2019-11-24T00:00:34.762830Z``).
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from privbandits.logs.feedback import LoggedFeedback
from privbandits.validation import InvalidInputError

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
"""DSJSON's ``Timestamp`` form (UTC, microseconds)."""


def _iso(value: str, path: Path, line: int) -> str:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(f"{path} line {line}: timestamp must be an ISO 8601 time, got {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def _times(path: Path, position: int | None) -> tuple[str, ...]:
    """The ``timestamp`` column in ISO 8601 UTC, rows kept as :func:`~privbandits.datasets.load_obd` keeps them."""
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        if "timestamp" not in header:
            raise InvalidInputError(f"{path} has no column 'timestamp'; an OBD events file has timestamp, item_id, ...")
        time, slot = header.index("timestamp"), header.index("position")
        rows = [(row[time], row[slot], line) for line, row in enumerate(reader, start=2)]
    kept = (row for row in rows if position is None or row[1] == str(position))
    return tuple(_iso(value, path, line) for value, _, line in kept)


def obd_feedback(folder: str | Path | None = None, *, position: int | None = None) -> LoggedFeedback:
    """One Open Bandit Dataset campaign folder (default: the sample, :func:`~privbandits.datasets.default_obd_path`)
    as logged feedback; ``position`` keeps one slot (numbered as in the file, 1 = top)."""
    from privbandits.datasets.obd import EVENTS_FILE, default_obd_path, load_obd, missing_sample

    if folder is None:
        folder = default_obd_path()
        if folder is None:
            raise FileNotFoundError(missing_sample())
    folder = Path(folder)
    data = load_obd(folder, position=position)
    assert data.propensities is not None and data.positions is not None  # the OBD loader always reads both
    return LoggedFeedback(
        n_rounds=data.n_events,
        n_actions=data.n_items,
        context=data.user_features,
        action=data.actions,
        reward=data.rewards,
        pscore=data.propensities,
        action_context=data.item_features,
        position=np.asarray(data.positions) - 1,
        timestamp=_times(folder / EVENTS_FILE, position),
    )
