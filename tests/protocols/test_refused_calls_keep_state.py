"""Refused protocol calls leave every party as it was (issue 30 item 7): state digests before and after, where the
bad-input files of each protocol check only the message (P2B's report choice, the vertical parties' own steps)."""

from __future__ import annotations

import numpy as np
import pytest
from bad_input import NAN, digest, rejects

from privbandits.linear import LinUCB
from privbandits.protocols.p2b.core import choose_reports
from privbandits.protocols.vertical.core import VerticalFederatedBandit
from privbandits.validation import CallOrderError

REWARDS = (np.arange(12).reshape(6, 2) % 2).astype(float)


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ((REWARDS, NAN, 0.1), "participation"),
        ((REWARDS, 1.5, 0.1), "participation"),
        ((REWARDS, 0.5, -0.1), "negative_rate"),
        ((REWARDS, 0.5, 1.5), "negative_rate"),
        ((REWARDS[0], 0.5, 0.1), "rewards"),
    ],
)
def test_a_refused_report_choice_draws_no_coin(args, name):
    """A device's coins come from its generator: a refused call must not advance it."""
    rng, twin = np.random.default_rng(4), np.random.default_rng(4)
    before = digest(rng)
    rejects(lambda: choose_reports(*args, rng), name, ValueError)
    assert digest(rng) == before
    users, rows = choose_reports(REWARDS, 0.5, 0.1, rng)
    twin_users, twin_rows = choose_reports(REWARDS, 0.5, 0.1, twin)
    np.testing.assert_array_equal(users, twin_users)
    np.testing.assert_array_equal(rows, twin_rows)


@pytest.mark.parametrize("secure", [False, True])
def test_the_active_party_refuses_to_learn_before_choosing_unchanged(secure):
    vf = VerticalFederatedBandit((3, 2, 2), LinUCB(4, 7, alpha=0.5), rng=np.random.default_rng(3),
                                 secure_aggregation=secure)  # fmt: skip
    contexts = np.random.default_rng(0).normal(size=(4, 7)) / 3
    vf.update(contexts, vf.select(contexts), 1.0)
    timers = vf.compute_seconds, vf.critical_path_seconds
    vf.compute_seconds = vf.critical_path_seconds = None
    before = digest(vf)
    rejects(lambda: vf.active.learn(0, 1.0), "choose() first", CallOrderError)
    assert digest(vf) == before
    vf.compute_seconds, vf.critical_path_seconds = timers
