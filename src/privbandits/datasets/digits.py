"""scikit-learn's bundled handwritten digits: the offline stand-in for MNIST.

The MPC paper preprocesses MNIST by PCA to 20 dimensions and scales every
example to unit norm (spec ``mpc-bandit.md`` §6.1); the same recipe is applied
here to the 1,797 8×8 digits that ship with scikit-learn, so no download is
needed.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

N_PIXELS = 64


class LabelledData(NamedTuple):
    """Features ``(n, d)`` and class labels ``(n,)`` of a classification data set."""

    features: np.ndarray
    labels: np.ndarray


def unit_normalise(features: np.ndarray) -> np.ndarray:
    """Scale every row to unit L2 norm (all-zero rows stay zero)."""
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    return features / np.where(norms == 0, 1.0, norms)


def load_digits_data(pca_components: int | None = 20, unit_norm: bool = True) -> LabelledData:
    """The digits data set, optionally reduced by PCA and scaled to unit norm.

    Parameters
    ----------
    pca_components : int or None
        Number of principal components to keep (1 … 64); None keeps all 64 pixels.
    unit_norm : bool
        Scale every example to unit L2 norm after the projection.
    """
    if pca_components is not None and not 1 <= pca_components <= N_PIXELS:
        raise ValueError(f"pca_components must be in [1, {N_PIXELS}] or None, got {pca_components}")
    from sklearn.datasets import load_digits  # imported here: scikit-learn takes a second to import
    from sklearn.decomposition import PCA

    digits = load_digits()
    features = digits.data.astype(np.float64)
    if pca_components is not None:
        features = PCA(n_components=pca_components, svd_solver="full").fit_transform(features)
    if unit_norm:
        features = unit_normalise(features)
    return LabelledData(features, digits.target.astype(np.int64))
