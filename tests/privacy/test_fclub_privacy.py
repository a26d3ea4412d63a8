"""The tree-based privatizer of FCLUB (spec fclub.md §4.2, §9 check 4) and its accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privbandits.privacy.tree_mechanism import (
    NoiseVariance,
    TreeMechanism,
    accounted_delta,
    accounted_epsilon,
    dyadic_cover,
    node_variance,
    symmetric_gaussian,
    symmetric_gaussians,
)


@pytest.mark.parametrize("k", range(1, 70))
def test_dyadic_cover_tiles_the_prefix(k):
    covered = []
    for level, block in dyadic_cover(k):
        covered.extend(range((block - 1) * 2**level + 1, block * 2**level + 1))
    assert sorted(covered) == list(range(1, k + 1))
    assert len(dyadic_cover(k)) == bin(k).count("1")


def test_each_release_is_the_sum_of_its_cached_cover_nodes():
    tree = TreeMechanism(4, 1.0, np.random.default_rng(0))
    seen: dict[tuple[int, int], np.ndarray] = {}
    for k in range(1, 40):
        release = tree.release()
        for key, node in tree.nodes.items():  # a cached node never changes
            if key in seen:
                assert np.array_equal(seen[key], node)
            seen[key] = node.copy()
        expected = sum(tree.nodes[key] for key in dyadic_cover(k))
        np.testing.assert_array_equal(release, expected)
        assert tree.levels_used == k.bit_length()
    assert len(tree.nodes) <= (40).bit_length()  # one live node per level


def test_trees_side_by_side_are_independent_trees_with_the_same_cover():
    """``runs=n``: every release is n trees' sums of their own cached cover nodes, each run's nodes drawn as one
    tree's (the first node of run r is symmetric_gaussians' r-th matrix)."""
    tree = TreeMechanism(3, 1.0, np.random.default_rng(4), runs=5)
    first = tree.release()
    assert first.shape == (5, 3, 3)
    np.testing.assert_array_equal(first, symmetric_gaussians(np.random.default_rng(4), 5, 3, 1.0))
    for k in range(2, 12):
        release = tree.release()
        np.testing.assert_array_equal(release, sum(tree.nodes[key] for key in dyadic_cover(k)))
    assert not any(np.array_equal(release[0], release[run]) for run in range(1, 5))  # the runs differ
    with pytest.raises(ValueError, match="runs >= 1"):
        TreeMechanism(3, 1.0, np.random.default_rng(4), runs=0)


def test_consecutive_releases_share_the_higher_nodes():
    tree = TreeMechanism(3, 1.0, np.random.default_rng(1))
    r1, r2, r3 = (tree.release() for _ in range(3))
    assert not np.allclose(r2 - r1, tree.nodes[(1, 1)])  # [1..2] is its own node, not leaf 1 plus a leaf 2
    np.testing.assert_allclose(r3 - r2, tree.nodes[(0, 3)])  # [1..3] = [1..2] ∪ {3}
    r4 = tree.release()
    np.testing.assert_array_equal(r4, tree.nodes[(2, 1)])  # [1..4] is one node


def test_symmetric_noise_has_the_stated_variances():
    std, size, draws = 2.0, 6, 4000
    rng = np.random.default_rng(2)
    noise = np.stack([symmetric_gaussian(rng, size, std) for _ in range(draws)])
    assert np.array_equal(noise, noise.transpose(0, 2, 1))
    upper = noise[:, *np.triu_indices(size, 1)]
    diagonal = noise[:, np.arange(size), np.arange(size)]
    assert upper.var() == pytest.approx(std**2, rel=0.03)  # 60000 samples: s.e. ≈ 0.6 %
    assert diagonal.var() == pytest.approx(2 * std**2, rel=0.05)
    assert abs(upper.mean()) < 0.05


def test_release_variance_grows_with_the_cover_size():
    """Off-diagonal variance of the k-th release is popcount(k)·σ² (k = 7: three nodes)."""
    values = []
    for seed in range(600):
        tree = TreeMechanism(5, 1.0, np.random.default_rng(seed))
        for _ in range(7):
            release = tree.release()
        values.append(release[np.triu_indices(5, 1)])
    assert np.var(values) == pytest.approx(3.0, rel=0.08)


def test_node_variance_forms_and_the_spec_table():
    """σ_noise ≈ 102 at ν = 18, ε = 1, δ = 0.1 (spec §4.4 table)."""
    assert math.sqrt(node_variance(1.0, 0.1, 18)) == pytest.approx(101.7, abs=0.1)
    log = math.log(20)
    assert node_variance(1.0, 0.1, 18, NoiseVariance.ALGORITHM5) == pytest.approx(64 * 18 * log)
    assert node_variance(1.0, 0.1, 3, NoiseVariance.REFERENCE_STD) == pytest.approx((64 * 3 * log**2) ** 2)
    with pytest.raises(ValueError, match="epsilon"):
        node_variance(0.0, 0.1, 3)


def test_accounting_composes_more_nodes_into_a_larger_epsilon():
    one, many = accounted_epsilon(2.0, 1, 1e-5), accounted_epsilon(2.0, 16, 1e-5)
    assert 0 < one < many < math.inf
    assert accounted_epsilon(2.0, 0, 1e-5) == 0.0
    assert accounted_epsilon(0.0, 3, 1e-5) == math.inf
    assert 0 < accounted_delta(2.0, 1, 1.0) < accounted_delta(2.0, 16, 1.0) < 1
    assert accounted_delta(0.0, 3, 1.0) == 1.0
