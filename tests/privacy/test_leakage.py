"""Leakage of the O3M messages to the active party (spec vertical-o3m.md §6, beyond the paper)."""

from __future__ import annotations

import numpy as np
import pytest

from privbandits.privacy.leakage import (
    complete_mask_block,
    gram_from_masked,
    ica_unmix,
    mask_recovery_curve,
    matched_correlation,
    recover_mask_block,
    secure_aggregation_view,
    subspace_distance,
    subspace_from_masked,
    unmask,
)
from privbandits.privacy.masks import draw_mask, split_columns

PARTITION = (4, 6, 6, 6)  # the AP's block, then three passive parties
D_J = 6


def mask_blocks(seed: int, partition: tuple[int, ...] = PARTITION) -> list[np.ndarray]:
    return split_columns(draw_mask(partition, rng=np.random.default_rng(seed)), partition)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_masked_gram_equals_raw_gram(seed):
    rng = np.random.default_rng(seed)
    block = mask_blocks(seed)[1]
    raw = rng.standard_normal((40, D_J))
    masked = raw @ block.T
    gram = gram_from_masked(masked)
    np.testing.assert_allclose(gram, raw @ raw.T, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.sqrt(np.diag(gram)), np.linalg.norm(raw, axis=1), rtol=0, atol=1e-12)
    distances = np.sqrt(np.diag(gram)[:, None] + np.diag(gram)[None, :] - 2 * gram)
    raw_distances = np.linalg.norm(raw[:, None] - raw[None, :], axis=-1)
    np.testing.assert_allclose(distances, raw_distances, rtol=0, atol=1e-6)  # sqrt near 0 amplifies round-off


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_known_plaintext_recovers_the_mask_with_d_j_pairs(seed):
    rng = np.random.default_rng(seed)
    block = mask_blocks(seed)[2]
    curve = mask_recovery_curve(block, rng.standard_normal((D_J + 3, D_J)), rng.standard_normal((200, D_J)))
    np.testing.assert_array_equal(curve.n_pairs, np.arange(1, D_J + 4))
    exact = curve.n_pairs >= D_J
    assert np.all(curve.mask_max_error[exact] <= 1e-8)
    assert np.all(curve.unmask_error[exact] <= 1e-8)
    # fewer pairs: the minimum-norm estimate is Q^j P, exactly sqrt(d_j - n) away in Frobenius norm
    np.testing.assert_allclose(curve.mask_frobenius_error[~exact], np.sqrt(D_J - curve.n_pairs[~exact]), atol=1e-10)
    assert curve.unmask_error[D_J - 2] > 0.1  # n = d_j - 1 on held-out vectors
    assert np.all(np.diff(curve.unmask_error[~exact]) < 0)


def test_recovered_mask_unmasks_everything():
    rng = np.random.default_rng(5)
    block = mask_blocks(5)[1]
    known = rng.standard_normal((D_J, D_J))
    estimate = recover_mask_block(known, known @ block.T)
    secret = rng.uniform(-1, 1, (500, D_J))
    np.testing.assert_allclose(unmask(estimate, secret @ block.T), secret, rtol=0, atol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_subspace_and_orthonormality_leave_one_sign_with_d_j_minus_1_pairs(seed):
    rng = np.random.default_rng(seed)
    block = mask_blocks(seed)[3]
    basis = subspace_from_masked(rng.standard_normal((50, D_J)) @ block.T, D_J)
    assert subspace_distance(basis, block) <= 1e-10
    assert subspace_distance(basis, mask_blocks(seed)[1]) > 0.5  # another party's span
    known = rng.standard_normal((D_J - 1, D_J))
    candidates = complete_mask_block(known, known @ block.T, basis)
    assert min(np.max(np.abs(candidate - block)) for candidate in candidates) <= 1e-10
    assert np.max(np.abs(recover_mask_block(known, known @ block.T) - block)) > 0.1  # least squares alone fails
    with pytest.raises(ValueError, match="d_j - 1 = 5"):
        complete_mask_block(known[:3], known[:3] @ block.T, basis)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("seed", [0, 1])
def test_ica_unmixes_independent_non_gaussian_features_but_not_gaussian_ones(seed):
    rng = np.random.default_rng(seed)
    d_j = 16
    block = mask_blocks(seed, (4, d_j, 8))[1]
    features = {
        "uniform": rng.uniform(-1, 1, (2000, d_j)),
        "laplace": rng.laplace(size=(2000, d_j)),
        "gaussian": rng.standard_normal((2000, d_j)),
    }
    scores = {name: matched_correlation(ica_unmix(raw @ block.T, d_j, rng), raw) for name, raw in features.items()}
    # 20 seeds: uniform >= 0.997, Laplace >= 0.993, Gaussian <= 0.56
    assert scores["uniform"] > 0.95
    assert scores["laplace"] > 0.95
    assert scores["gaussian"] < 0.7


def test_secure_aggregation_hides_each_partys_gram_but_not_their_sum():
    rng = np.random.default_rng(7)
    blocks = mask_blocks(7)
    raws = [rng.standard_normal((30, D_J)) for _ in blocks[1:]]
    view = secure_aggregation_view([raw @ block.T for raw, block in zip(raws, blocks[1:], strict=True)])
    gram = gram_from_masked(view)
    grams = [raw @ raw.T for raw in raws]
    np.testing.assert_allclose(gram, sum(grams), rtol=0, atol=1e-10)
    for own in grams:
        assert np.max(np.abs(gram - own)) > 1.0


def test_known_plaintext_under_secure_aggregation_needs_every_passive_plaintext_or_many_pairs():
    rng = np.random.default_rng(8)
    blocks = mask_blocks(8)
    passive = np.hstack(blocks[1:])

    def attack(n: int) -> tuple[float, float]:
        raws = [rng.uniform(-1, 1, (n, D_J)) for _ in blocks[1:]]
        view = secure_aggregation_view([raw @ block.T for raw, block in zip(raws, blocks[1:], strict=True)])
        one = np.linalg.norm(recover_mask_block(raws[0], view) - blocks[1])
        everyone = np.linalg.norm(recover_mask_block(np.hstack(raws), view) - passive)
        return one, everyone

    one, everyone = attack(3 * D_J)  # as many pairs as the joint block has columns
    assert one > 1.0
    assert everyone <= 1e-8
    one_many, _ = attack(6000)  # the other parties act as noise: error ~ sqrt(12 / n)
    assert 0.02 < one_many < 0.3


def test_bad_inputs_name_the_field():
    with pytest.raises(ValueError, match="masked must be a 2-D array"):
        gram_from_masked(np.zeros(3))
    with pytest.raises(ValueError, match="same number of rows"):
        recover_mask_block(np.zeros((3, 2)), np.zeros((4, 5)))
    with pytest.raises(ValueError, match="d_j must be in 1..5"):
        subspace_from_masked(np.ones((4, 5)), 6)
    with pytest.raises(ValueError, match="n_pairs must lie in 1..3"):
        mask_recovery_curve(np.eye(4)[:, :2], np.ones((3, 2)), np.ones((2, 2)), n_pairs=[4])
    with pytest.raises(ValueError, match="same shape"):
        secure_aggregation_view([np.zeros((2, 3)), np.zeros((2, 4))])
    with pytest.raises(ValueError, match="NaN"):
        matched_correlation(np.full((3, 2), np.nan), np.ones((3, 2)))
