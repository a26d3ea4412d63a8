"""FCLUB's privatizer PVT(ℓ, j) by the square-root matrix factorization (``continual_release =
"sqrt_factorization"``, issue 47 item 5), in place of the paper's binary tree (§4.2).

The tree adds data-independent noise to the cluster's sums, so a local server draws it ahead (the next upload's
noise enters the upload trigger) and sends data plus the difference of two prefix noises. The factorization's
release is ``C(snap(C x) + z)`` of the stream ``x`` itself, so it needs the data: each release takes every datum of
the cluster's users since the privatizer's previous one (the first: all of them), and returns their noisy total.
What a local server sends is computed from these releases and the public shifts alone (post-processing): a phase
upload is its release plus the shift, an upload the difference of its release and the release the global server
holds for the cluster, plus the shift. One datum enters one increment of each privatizer its users' clusters
had: one Gaussian release of ``C x + z`` per privatizer (:func:`~privbandits.privacy.factorization.releases`).
"""

from __future__ import annotations

import numpy as np

from privbandits.privacy.factorization import FactorizationNoise, SqrtFactorization


class FactorizedPrivatizer:
    """One privatizer: the noisy totals of a stream of symmetric ``size × size`` statistics.

    Parameters
    ----------
    noise : FactorizationNoise
        σ, its grid and the horizon (the most releases), as :class:`~privbandits.protocols.fclub.config.Calibration`
        computes them for every privatizer of a run.
    size : int
        d + 1: the augmented statistic ``Σ z zᵀ``, z = [x; y], as the tree's.
    rng : numpy.random.Generator
        Source of its noise.

    Attributes
    ----------
    std : float
        σ of its noise (what the ledger records).
    fed : ndarray
        The total of the data released so far.
    """

    def __init__(self, noise: FactorizationNoise, size: int, rng: np.random.Generator) -> None:
        self.mechanism = SqrtFactorization(noise, (size, size), rng, symmetric=True)
        self.std = noise.std
        self.fed = np.zeros((size, size))

    @property
    def releases(self) -> int:
        """Releases made so far."""
        return self.mechanism.releases

    def release(self, total: np.ndarray) -> np.ndarray:
        """The noisy ``total`` (every datum so far): the stream's next datum is what it adds to the last one fed."""
        released = self.mechanism.release(total - self.fed)
        self.fed = total.copy()
        return released
