"""The event store and recovery: a crash loses nothing committed, replays it exactly once; damage is one line."""

from __future__ import annotations

import os
import sqlite3
import stat

import numpy as np
import pytest
from conftest import Clock, learner, open_service

from privbandits.serve.decider import DecideInput, Refused
from privbandits.serve.reference import ReferenceDecider
from privbandits.serve.store import EventStore, StoreError


def _traffic(service, clock: Clock, seed: int, n: int = 20) -> None:
    """Decisions, rewards late and out of order, duplicates, and some events left to time out."""
    rng = np.random.default_rng(seed)
    open_ids: list[str] = []
    for i in range(n):
        service.decide(DecideInput(f"s{seed}e{i}", f"u{i % 3}", rng.normal(size=(3, 2))))
        open_ids.append(f"s{seed}e{i}")
        if rng.random() < 0.6 and open_ids:
            event = open_ids.pop(int(rng.integers(len(open_ids))))
            if rng.random() < 0.85 and service.store.get(event).status == "open":
                service.reward(event, float(rng.normal()))
        clock.now += 7.0
        service.expire_due()


def _replayed_reference(service) -> bytes:
    """A fresh learner fed the store's rewards in the order they were absorbed."""
    reference = ReferenceDecider(service.decider.learner)
    for entry in service.store.journal(0):
        if entry.kind == "rewarded":
            reference.absorb(entry.event, entry.reward)
    return reference.checkpoint()


@pytest.mark.parametrize("policy", ["linucb", "epsilon-greedy"])
@pytest.mark.parametrize("checkpoint_every", [1, 5, 1000])
def test_a_crashed_service_is_rebuilt_exactly(tmp_path, policy: str, checkpoint_every: int) -> None:
    clock = Clock()
    path = tmp_path / "s.sqlite"
    service = open_service(path, learner(policy, layout="disjoint"), clock, checkpoint_every)
    _traffic(service, clock, seed=1)
    live, counts = service.decider.checkpoint(), service.store.counts()
    assert counts["expired"] > 0 and counts["rewarded"] > 0
    service.store._db.close()  # a crash: no final checkpoint, no clean shutdown
    again = open_service(path, learner(policy, layout="disjoint"), clock, checkpoint_every)
    assert again.decider.checkpoint() == live == _replayed_reference(again)
    assert again.store.counts() == counts and again.open_events == counts["open"]
    _traffic(again, clock, seed=2)  # and the session goes on
    assert again.decider.checkpoint() == _replayed_reference(again)
    again.close()


def test_a_reward_committed_but_unacknowledged_is_absorbed_once(tmp_path) -> None:
    clock = Clock()
    path = tmp_path / "s.sqlite"
    service = open_service(path, learner(), clock)
    service.decide(DecideInput("e1", "u", np.eye(3, 2)))
    service.store.close_event("e1", 1.0)  # committed, then the process dies before absorbing and answering
    service.store._db.close()
    again = open_service(path, learner(), clock)
    assert again.decider.model_version == 1
    assert again.reward("e1", 1.0).duplicate  # the application's retry
    assert again.decider.model_version == 1
    again.close()


def test_the_store_is_private_and_refuses_another_learner(tmp_path) -> None:
    path = tmp_path / "s.sqlite"
    open_service(path, learner(), Clock()).close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with pytest.raises(StoreError, match=f"event store {path} cannot be used: it was written by a learner of another"):
        open_service(path, learner(n_arms=4), Clock())


@pytest.mark.parametrize("damage", ["garbage", "truncated", "schema"])
def test_a_damaged_store_is_one_line_naming_the_file(tmp_path, damage: str) -> None:
    path = tmp_path / "s.sqlite"
    open_service(path, learner(), Clock()).close()
    if damage == "garbage":
        path.write_bytes(b"this is not a database" * 100)
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:1500])
    else:
        with sqlite3.connect(path) as db:
            db.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    with pytest.raises(StoreError) as caught:
        open_service(path, learner(), Clock())
    assert str(caught.value).startswith(f"event store {path} cannot be used") and "\n" not in str(caught.value)


def test_a_checkpoint_that_does_not_fit_is_refused(tmp_path) -> None:
    decider = ReferenceDecider(learner())
    with pytest.raises(ValueError, match="checkpoint does not fit"):
        decider.restore(ReferenceDecider(learner(dim=3)).checkpoint())


def test_tokens_are_stored_as_hashes(tmp_path) -> None:
    from privbandits.serve.auth import TokenSet, new_token, token_hash

    store = EventStore(tmp_path / "s.sqlite", "x")
    token = new_token()
    store.add_token("app", token_hash(token))
    assert token not in (tmp_path / "s.sqlite").read_bytes().decode("latin-1")
    tokens = TokenSet(store.token_hashes())
    assert tokens.client(f"Bearer {token}") == "app" and tokens.client(f"Bearer {token}x") is None
    store.close()


def test_a_refused_decision_changes_nothing(tmp_path) -> None:
    service = open_service(tmp_path / "s.sqlite", learner("epsilon-greedy"), Clock())
    state = service.decider.policy.rng.bit_generator.state
    with pytest.raises(Refused):
        service.decide(DecideInput("e1", "u", np.ones((2, 2))))
    assert service.decider.policy.rng.bit_generator.state == state and service.store.last_seq == 0
    service.close()


def test_rows_are_kept_exactly_and_rows_kept_as_json_numbers_still_read() -> None:
    from privbandits.serve.store import features_of, features_text

    rows = np.asarray([[0.1, -0.0, 5e-324], [1e308, -2.5, 1 / 3]])
    kept = features_of(features_text(rows))
    assert kept.dtype == np.float64 and kept.shape == rows.shape and kept.tobytes() == rows.tobytes()
    assert features_of("[[0.1,-0.0],[1e+308,2.5]]").tolist() == [[0.1, -0.0], [1e308, 2.5]]


def test_a_repeat_of_an_event_decided_under_the_json_digest_gets_its_answer(tmp_path) -> None:
    """A store written before features were kept as bytes holds the digest of the request as JSON numbers."""
    from privbandits.serve.service import legacy_digest

    service = open_service(tmp_path / "s.sqlite", learner(), Clock())
    asked = DecideInput("e1", "u", np.asarray([[0.5, 0.1], [0.2, 0.9], [0.3, 0.3]]))
    first = service.decide(asked)
    service.store._db.execute("UPDATE events SET request_sha256 = ? WHERE event_id = 'e1'", (legacy_digest(asked),))
    assert service.decide(asked) == first
    with pytest.raises(Refused, match="already decided for other input"):
        service.decide(DecideInput("e1", "u", asked.features + 1))
    service.close()
