"""MovieLens ``ratings.dat`` and the user-vector recipe of FCLUB's experiments (spec ``fclub.md`` §6.2, §8 A19).

``ratings.dat`` (MovieLens 1M) has one rating per line, ``UserID::MovieID::Rating::Timestamp``.
The recipe of the FCLUB reference code turns it into preference vectors:

1. a *binary* user × movie matrix (1 = rated), :func:`load_ratings`;
2. the top ``3n`` users by number of ratings, then among them the top ``n_items``
   movies by number of raters, then the top ``n`` users within those movies,
   :func:`most_active`;
3. the first ``d − 1`` left singular vectors of that matrix, each user row
   ℓ2-normalised, a constant 1 appended and the whole divided by √2 (unit-norm
   features whose last coordinate is 1/√2), :func:`user_features`;
4. k-means on the features: each user's θ is its cluster centre,
   :func:`preference_vectors` (the spec's default k = m = 4; the reference code used 10).

The same steps apply to any binary interaction matrix (e.g. the Yelp counts, binarised).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy.sparse import csr_matrix

from privbandits.datasets.digits import unit_normalise

FCLUB_FILES = {"movielens": "ml_500user_500item.npy", "movielens_reference_vectors": "ml_1000user_d10.npy"}


class Ratings(NamedTuple):
    """Binary user × movie matrix (CSR, 1 = rated) and the original ids of its rows and columns."""

    matrix: csr_matrix
    user_ids: np.ndarray
    movie_ids: np.ndarray


class Preferences(NamedTuple):
    """Per-user preference vectors ``θ_i`` (the k-means centres), the users' cluster labels and the centres."""

    user_thetas: np.ndarray
    labels: np.ndarray
    centres: np.ndarray


def default_fclub_data_path() -> Path | None:
    """The FCLUB matrices' ``fclub`` folder in the offline data (:func:`~privbandits.datasets.cache.shared_data`),
    or None if absent."""
    from privbandits.datasets.cache import shared_data

    path = shared_data("fclub")
    return path if path is not None and path.is_dir() else None


def load_ratings(path: Path | str) -> Ratings:
    """Read a MovieLens ``ratings.dat`` into a binary user × movie matrix, ids sorted ascending.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        On a line that is not ``UserID::MovieID::Rating::Timestamp`` with integer ids, or an empty file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"MovieLens ratings file {path} does not exist")
    users, movies = [], []
    with path.open(encoding="latin-1") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            fields = line.rstrip("\r\n").split("::")
            if len(fields) != 4:
                raise ValueError(
                    f"{path}, line {number}: expected 'UserID::MovieID::Rating::Timestamp', got {line.strip()!r}"
                )
            try:
                users.append(int(fields[0]))
                movies.append(int(fields[1]))
            except ValueError:
                raise ValueError(
                    f"{path}, line {number}: user and movie ids must be integers, got {line.strip()!r}"
                ) from None
    if not users:
        raise ValueError(f"{path} holds no ratings")
    user_ids, rows = np.unique(users, return_inverse=True)
    movie_ids, columns = np.unique(movies, return_inverse=True)
    matrix = csr_matrix((np.ones(len(rows)), (rows, columns)), shape=(len(user_ids), len(movie_ids)))
    matrix.sum_duplicates()  # older scipy keeps a repeated (user, movie) as two entries until asked
    matrix.data[:] = 1.0  # a user who rated a movie twice is still 1
    return Ratings(matrix, user_ids, movie_ids)


def _top(counts: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest counts, largest first, ties by index."""
    return np.argsort(-counts, kind="stable")[:k]


def most_active(matrix, n_users: int, n_items: int) -> np.ndarray:
    """Dense ``(n_users, n_items)`` sub-matrix: top 3n users, then top items, then top n users (recipe step 2)."""
    matrix = csr_matrix(matrix)
    if n_users > matrix.shape[0] or n_items > matrix.shape[1]:
        raise ValueError(
            f"asked for {n_users} users × {n_items} items of a {matrix.shape[0]} × {matrix.shape[1]} matrix"
        )
    users = matrix[_top(matrix.getnnz(axis=1), 3 * n_users)]
    items = users[:, _top(users.getnnz(axis=0), n_items)]
    return items[_top(items.getnnz(axis=1), n_users)].toarray()


def user_features(binary: np.ndarray, dim: int) -> np.ndarray:
    """Unit-norm user features ``[u/‖u‖, 1]/√2``, u the first ``dim − 1`` left singular vectors (step 3)."""
    binary = np.asarray(binary, dtype=float)
    if binary.ndim != 2 or not 2 <= dim <= min(binary.shape) + 1:
        raise ValueError(f"need a 2-D matrix and 2 <= dim <= min(shape) + 1, got shape {binary.shape}, dim={dim}")
    left, _, _ = np.linalg.svd(binary, full_matrices=False)
    head = unit_normalise(left[:, : dim - 1])
    return np.hstack([head, np.ones((len(head), 1))]) / np.sqrt(2.0)


def preference_vectors(binary: np.ndarray, dim: int = 10, n_clusters: int = 4, seed: int = 0) -> Preferences:
    """θ of every user: its k-means centre among the :func:`user_features` (steps 3–4)."""
    features = user_features(binary, dim)
    if not 1 <= n_clusters <= len(features):
        raise ValueError(f"n_clusters must be in 1..{len(features)} (users), got {n_clusters}")
    from sklearn.cluster import KMeans  # imported here: scikit-learn takes a second to import, runs rarely need it

    model = KMeans(n_clusters=n_clusters, n_init=10, random_state=seed).fit(features)
    return Preferences(model.cluster_centers_[model.labels_], model.labels_.astype(np.int64), model.cluster_centers_)


def load_interactions(path: Path | str) -> np.ndarray:
    """A shipped ``.npy`` user × item matrix (MovieLens 0/1 or Yelp counts), binarised (nonzero → 1)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"interaction matrix {path} does not exist")
    matrix = np.load(path, allow_pickle=False)
    if matrix.ndim != 2:
        raise ValueError(f"{path} must hold a 2-D user × item matrix, got shape {matrix.shape}")
    return (matrix != 0).astype(float)
