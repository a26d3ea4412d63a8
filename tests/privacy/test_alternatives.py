"""O3M, Paillier and DP statistic computations agree with plaintext LinUCB (spec vertical-o3m.md §5.5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privbandits.privacy.alternatives import (
    KeyHolder,
    PaillierProfile,
    dp_statistics,
    gaussian_sigma,
    masked_state,
    mpc_engine,
    mpc_statistics,
    o3m_statistics,
    paillier_statistics,
    plaintext_statistics,
    random_round,
    share_state,
)
from privbandits.privacy.masks import draw_mask, split_columns

PARTITION = (2, 2, 2)  # d = 6: the AP's block, then two passive parties
N_ARMS = 3


@pytest.fixture(scope="module")
def key_holder() -> KeyHolder:
    return KeyHolder(key_bits=512)  # test size only; 2048 is the default


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_o3m_statistics_are_lossless(seed):
    rng = np.random.default_rng(seed)
    inputs = random_round((20, 20, 20, 20, 20), 10, rng)
    mask = draw_mask((20, 20, 20, 20, 20), rng=rng)
    reference = plaintext_statistics(inputs.blocks, inputs.A_inv, inputs.theta)
    state = masked_state(mask, inputs.A_inv, inputs.theta)
    masked = o3m_statistics(inputs.blocks, split_columns(mask, (20,) * 5), *state)
    assert masked.max_error(reference) <= 1e-10


def test_plaintext_statistics_match_linucb_formulas():
    rng = np.random.default_rng(3)
    inputs = random_round(PARTITION, N_ARMS, rng)
    x = inputs.contexts
    stats = plaintext_statistics(inputs.blocks, inputs.A_inv, inputs.theta)
    for a in range(N_ARMS):
        assert stats.estimates[a] == pytest.approx(x[a] @ inputs.theta, abs=1e-14)
        assert stats.widths[a] == pytest.approx(math.sqrt(x[a] @ inputs.A_inv @ x[a]), abs=1e-14)
    assert np.all(stats.widths > 0) and np.all(stats.widths <= 1)  # unit contexts, A >= I


@pytest.mark.parametrize("seed", [0, 1])
def test_paillier_statistics_match_plaintext_to_fixed_point_precision(seed, key_holder):
    rng = np.random.default_rng(seed)
    inputs = random_round(PARTITION, N_ARMS, rng, history=20)
    reference = plaintext_statistics(inputs.blocks, inputs.A_inv, inputs.theta)
    profile = PaillierProfile()
    encrypted = paillier_statistics(inputs.blocks, inputs.A_inv, inputs.theta, key_holder, profile=profile)
    assert encrypted.max_error(reference) <= 1e-9
    dim, passive = 6, 4
    assert profile.encryptions == N_ARMS * (passive + dim + 3)
    assert profile.decryptions == N_ARMS * (dim + 2)
    # theta (4 passive coordinates) + lower-triangular L^T x on the passive rows + the blinding correction
    triangular = sum(dim - max(k, 2) for k in range(dim))
    assert profile.products == N_ARMS * (passive + triangular + dim)
    assert set(profile.seconds) == {"encrypt", "linear", "square", "reveal"}
    assert profile.total_seconds > 0


def test_paillier_handles_a_state_with_negative_and_large_values(key_holder):
    rng = np.random.default_rng(4)
    inputs = random_round(PARTITION, N_ARMS, rng, history=0, reg=0.25)  # A^{-1} = 4 I
    theta = rng.normal(0.0, 5.0, 6)
    reference = plaintext_statistics(inputs.blocks, inputs.A_inv, theta)
    encrypted = paillier_statistics(inputs.blocks, inputs.A_inv, theta, key_holder)
    assert encrypted.max_error(reference) <= 1e-9
    np.testing.assert_allclose(encrypted.widths, 2.0, atol=1e-9)


def test_paillier_rejects_contexts_above_the_bound_and_keys_too_small(key_holder):
    inputs = random_round(PARTITION, N_ARMS, np.random.default_rng(5))
    with pytest.raises(ValueError, match="context_bound"):
        paillier_statistics([2 * block for block in inputs.blocks], inputs.A_inv, inputs.theta, key_holder)
    with pytest.raises(ValueError, match="key_bits = 512 is too small"):
        paillier_statistics(inputs.blocks, inputs.A_inv, inputs.theta, key_holder, context_bound=1e30)
    for bad in (-inputs.A_inv, inputs.A_inv + np.triu(np.full((6, 6), 1e-3), 1)):
        with pytest.raises(ValueError, match="symmetric positive definite"):
            paillier_statistics(inputs.blocks, bad, inputs.theta, key_holder)
    with pytest.raises(ValueError, match="key_bits must be an even number"):
        KeyHolder(key_bits=255)


def test_key_holder_returns_fresh_encryptions(key_holder):
    public_key = key_holder.public_key
    n = public_key.n
    ciphertexts = [public_key.raw_encrypt(3), public_key.raw_encrypt(n - 4)]
    assert key_holder.decrypt_signed(ciphertexts) == [3, -4]
    first, second = (key_holder.encrypted_square_sum(ciphertexts) for _ in range(2))
    assert first != second  # randomised
    assert key_holder.decrypt_signed([first, second]) == [25, 25]


def test_gaussian_mechanism_scale():
    assert gaussian_sigma(0.5, 1e-5) == pytest.approx(2.0 * math.sqrt(2 * math.log(1.25e5)) / 0.5)
    with pytest.raises(ValueError, match="epsilon must be in"):
        gaussian_sigma(1.0, 1e-5)
    with pytest.raises(ValueError, match="delta must be in"):
        gaussian_sigma(0.5, 0.0)
    with pytest.raises(ValueError, match="sensitivity"):
        gaussian_sigma(0.5, 1e-5, sensitivity=0)


def test_dp_statistics_are_lossy_with_the_stated_noise():
    rng = np.random.default_rng(6)
    inputs = random_round(PARTITION, N_ARMS, rng)
    reference = plaintext_statistics(inputs.blocks, inputs.A_inv, inputs.theta)
    noisy = dp_statistics(inputs.blocks, inputs.A_inv, inputs.theta, epsilon=0.5, delta=1e-5, rng=rng)
    assert noisy.max_error(reference) > 1.0  # sigma ~ 19 on unit-norm contexts
    # the estimate error is theta_passive^T noise: its spread matches sigma * ||theta_passive||
    errors = [
        dp_statistics(inputs.blocks, inputs.A_inv, inputs.theta, epsilon=0.5, delta=1e-5, rng=rng).estimates[0]
        - reference.estimates[0]
        for _ in range(2000)
    ]
    expected = gaussian_sigma(0.5, 1e-5) * np.linalg.norm(inputs.theta[2:])
    assert np.std(errors) == pytest.approx(expected, rel=0.1)


def test_bad_round_inputs_name_the_field():
    inputs = random_round(PARTITION, N_ARMS, np.random.default_rng(7))
    with pytest.raises(ValueError, match="A_inv has shape"):
        plaintext_statistics(inputs.blocks, np.eye(5), inputs.theta)
    with pytest.raises(ValueError, match=r"blocks\[1\] has shape"):
        plaintext_statistics([inputs.blocks[0], inputs.blocks[1][:2], inputs.blocks[2]], inputs.A_inv, inputs.theta)
    with pytest.raises(ValueError, match="mask blocks"):
        o3m_statistics(inputs.blocks, [np.eye(6)[:, :2]], inputs.A_inv, inputs.theta)


@pytest.mark.parametrize(("partition", "n_arms"), [((20,) * 5, 20), ((3, 4, 5), 6)])
def test_mpc_statistics_match_plaintext_within_fixed_point_and_only_the_ap_learns_them(partition, n_arms):
    rng = np.random.default_rng(4)
    inputs = random_round(partition, n_arms, rng)
    engine = mpc_engine(len(partition), seed=1)
    state = share_state(engine, inputs.A_inv, inputs.theta)
    stats = mpc_statistics(inputs.blocks, engine, state)
    reference = plaintext_statistics(inputs.blocks, inputs.A_inv, inputs.theta)
    assert stats.max_error(reference) <= 2e-3  # L = 20 fractional bits, a sum of d products per statistic
    assert stats.ucb_arm(0.5) == reference.ucb_arm(0.5)
    # the statistics travel to the AP alone: every message of the reveal goes to p0
    reveal = [row for row in engine.traffic.rows() if row[0] == "reveal"]
    assert {row[2] for row in reveal} == {"p0"} and {row[1] for row in reveal} == set(engine.names[1:])
    assert engine.traffic.rounds["reveal"] == 1 and engine.traffic.rounds["round"] >= 3
    with pytest.raises(ValueError, match="got 2 blocks for an engine of"):
        mpc_statistics(inputs.blocks[:2], engine, state)
