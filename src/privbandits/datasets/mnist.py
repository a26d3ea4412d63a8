"""MNIST from local IDX files with the MPC paper's preprocessing; digits as the offline stand-in.

The paper (spec ``mpc-bandit.md`` §6.1) sweeps once over the 60,000 training
images: pixels / 255, PCA fitted on the training set (mean-centred covariance,
``eigh``, top 20 eigenvectors), projection, unit L2 norm per example; the 10,000
test images, projected with the training PCA, are the held-out set of the
membership attack. MNIST cannot be downloaded here, so :func:`digits_stand_in`
applies the same recipe to scikit-learn's 1,797 bundled 8×8 digits, split into
train and held-out parts, and says so in its ``source``.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import NamedTuple

import numpy as np
from sklearn.datasets import load_digits

from privbandits.datasets.digits import LabelledData, unit_normalise

IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
"""IDX type codes (third byte of the magic number) and their big-endian numpy dtypes."""

MNIST_FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
PCA_COMPONENTS = 20


class BanditDataset(NamedTuple):
    """A classification data set prepared as the paper's bandit: train sweep and held-out set."""

    train: LabelledData
    test: LabelledData
    source: str
    stand_in: bool


def read_idx(path: Path | str) -> np.ndarray:
    """The array stored in an IDX file (optionally gzip-compressed), in native byte order.

    Raises
    ------
    ValueError
        If the header is not IDX (two zero bytes, a known type code, a dimension
        count) or the data length does not match the dimensions.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        data = handle.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in IDX_DTYPES:
        raise ValueError(f"{path}: not an IDX file (magic bytes {data[:4].hex() or 'missing'})")
    ndim = data[3]
    header = 4 + 4 * ndim
    if ndim == 0 or len(data) < header:
        raise ValueError(f"{path}: IDX header needs {ndim} dimension sizes, file has {len(data)} bytes")
    shape = tuple(int(n) for n in np.frombuffer(data, ">u4", ndim, 4))
    dtype = np.dtype(IDX_DTYPES[data[2]])
    expected = header + dtype.itemsize * int(np.prod(shape))
    if len(data) != expected:
        raise ValueError(f"{path}: IDX shape {shape} of {dtype} needs {expected} bytes, file has {len(data)}")
    return np.frombuffer(data, dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def _find(folder: Path, stem: str) -> Path:
    for name in (stem, f"{stem}.gz"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"{folder} has no {stem} or {stem}.gz (MNIST IDX files, see yann.lecun.com/exdb/mnist)")


def paper_preprocess(
    train_pixels: np.ndarray, test_pixels: np.ndarray, components: int = PCA_COMPONENTS
) -> tuple[np.ndarray, np.ndarray]:
    """PCA fitted on ``train_pixels`` (rows), applied to both, then unit norm (spec §6.1 [C]).

    The PCA is plaintext on pooled data, an experimental simplification (spec A3).
    """
    if not 1 <= components <= train_pixels.shape[1]:
        raise ValueError(f"components must be in [1, {train_pixels.shape[1]}], got {components}")
    mean = train_pixels.mean(axis=0)
    centred = train_pixels - mean
    _, vectors = np.linalg.eigh(centred.T @ centred / len(centred))
    top = vectors[:, ::-1][:, :components]
    return unit_normalise(centred @ top), unit_normalise((test_pixels - mean) @ top)


def _labelled(images: np.ndarray, labels: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
        raise ValueError(f"MNIST {what}: images {images.shape} and labels {labels.shape} do not match")
    return images.reshape(len(images), -1) / 255.0, labels.astype(np.int64)


def load_mnist(folder: Path | str, components: int = PCA_COMPONENTS) -> BanditDataset:
    """MNIST from the four IDX files in ``folder`` (plain or ``.gz``), preprocessed as the paper."""
    folder = Path(folder)
    paths = {key: _find(folder, stem) for key, stem in MNIST_FILES.items()}
    train_x, train_y = _labelled(read_idx(paths["train_images"]), read_idx(paths["train_labels"]), "train")
    test_x, test_y = _labelled(read_idx(paths["test_images"]), read_idx(paths["test_labels"]), "test")
    train_f, test_f = paper_preprocess(train_x, test_x, components)
    source = f"MNIST at {folder}, {len(train_y)} train / {len(test_y)} held out"
    return BanditDataset(LabelledData(train_f, train_y), LabelledData(test_f, test_y), source, False)


def digits_stand_in(components: int = PCA_COMPONENTS, test_fraction: float = 0.2, seed: int = 0) -> BanditDataset:
    """scikit-learn's digits (pixels / 16) with the paper's preprocessing: the offline MNIST stand-in."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    digits = load_digits()
    order = np.random.default_rng(seed).permutation(len(digits.target))
    n_test = round(test_fraction * len(order))
    test, train = order[:n_test], order[n_test:]
    pixels, labels = digits.data / 16.0, digits.target.astype(np.int64)
    train_f, test_f = paper_preprocess(pixels[train], pixels[test], components)
    source = f"scikit-learn digits, {len(train)} train / {len(test)} held out (STAND-IN for MNIST)"
    return BanditDataset(LabelledData(train_f, labels[train]), LabelledData(test_f, labels[test]), source, True)
