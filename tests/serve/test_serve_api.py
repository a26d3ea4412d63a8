"""The application API in process: decide and reward, idempotency, delayed feedback, timeouts, metrics."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import TIMEOUT_S, Served, learner
from prometheus_client.parser import text_string_to_metric_families

from privbandits.serve.client import ServeClient, ServeError
from privbandits.serve.decider import DecidedEvent
from privbandits.serve.reference import ReferenceDecider

ROWS = [[0.5, 0.1], [0.2, 0.9], [0.3, 0.3]]


def decide(served: Served, event_id: str, rows=ROWS, user: str = "u1") -> dict:
    response = served.client.post("/v1/decide", json={"event_id": event_id, "user_id": user, "features": rows})
    assert response.status_code == 200, response.text
    return response.json()


def reward(served: Served, event_id: str, value: float):
    return served.client.post("/v1/reward", json={"event_id": event_id, "reward": value})


def test_decide_then_reward_round_trip(served: Served) -> None:
    answer = decide(served, "e1")
    assert answer["event_id"] == "e1" and answer["model_version"] == 0 and 0 <= answer["arm"] < 3
    randomises = served.service.decider.kind.endswith("epsilon-greedy")
    assert (answer["propensity"] is not None) == randomises
    acked = reward(served, "e1", 1.0)
    assert acked.status_code == 200 and acked.json() == {"event_id": "e1", "duplicate": False, "model_version": 1}
    assert served.client.get("/v1/health").json()["model_version"] == 1


def test_a_repeated_event_gets_the_same_answer(served: Served) -> None:
    answers = [decide(served, "e1") for _ in range(5)]
    assert all(answer == answers[0] for answer in answers)
    other = served.client.post("/v1/decide", json={"event_id": "e1", "user_id": "u1", "features": ROWS[::-1]})
    assert other.status_code == 409 and other.json()["error"]["field"] == "event_id"
    assert served.service.store.counts()["open"] == 1


def test_epsilon_greedy_propensities_are_those_of_the_policy(tmp_path) -> None:
    from conftest import Clock, open_service

    service = open_service(tmp_path / "s.sqlite", learner("epsilon-greedy", epsilon=0.3), Clock())
    from privbandits.serve.decider import DecideInput

    propensities = {service.decide(DecideInput(f"e{i}", "u", np.asarray(ROWS))).propensity for i in range(60)}
    assert sorted(propensities) == pytest.approx([0.1, 0.8])  # another arm, the greedy arm: (1 - ε) + ε/K
    service.close()


def test_late_out_of_order_and_duplicate_rewards_are_absorbed_once(served: Served) -> None:
    rng = np.random.default_rng(0)
    rows = {f"e{i}": rng.normal(size=(3, 2)).tolist() for i in range(6)}
    arms = {event: decide(served, event, value)["arm"] for event, value in rows.items()}
    order = ["e4", "e0", "e4", "e5", "e2", "e0", "e1", "e3"]  # late, out of order, twice
    acks = [reward(served, event, float(event[1:])) for event in order]
    assert [ack.json()["duplicate"] for ack in acks] == [False, False, True, False, False, True, False, False]
    reference = ReferenceDecider(learner(served.service.decider.learner.policy))
    for event in dict.fromkeys(order):  # the first arrival of each, in order
        reference.absorb(DecidedEvent(event, "u1", arms[event], None, 0, {"features": rows[event]}), float(event[1:]))
    assert served.service.decider.checkpoint() == reference.checkpoint()
    conflicting = reward(served, "e0", 5.0)
    assert conflicting.status_code == 409 and conflicting.json()["error"]["field"] == "reward"


def test_an_event_without_reward_closes_after_the_timeout(served: Served) -> None:
    decide(served, "early")
    served.clock.now += TIMEOUT_S / 2
    decide(served, "late")
    served.clock.now += TIMEOUT_S / 2 + 1  # "early" is past its deadline, "late" is not
    before = served.service.decider.checkpoint()
    refused = reward(served, "early", 1.0)  # closed on arrival, before the sweep
    assert refused.status_code == 409 and refused.json()["error"] == {
        "field": "event_id", "message": "is closed: no reward came within reward_timeout_s"}  # fmt: skip
    assert served.service.decider.checkpoint() == before  # the learner was told nothing
    assert reward(served, "late", 1.0).status_code == 200
    decide(served, "never")
    served.clock.now += TIMEOUT_S + 1
    assert served.service.expire_due() == 1
    assert served.client.get("/v1/ledger").json()["events"] == {"open": 0, "rewarded": 1, "expired": 2}
    assert decide(served, "early")["event_id"] == "early"  # a closed event's decision is still there


def test_metrics_count_decisions_rewards_and_expiries(served: Served) -> None:
    decide(served, "a")
    decide(served, "a")
    decide(served, "b")
    reward(served, "a", 1.0)
    reward(served, "a", 1.0)
    served.client.post("/v1/reward", json={"event_id": "zz", "reward": 1.0})
    text = served.client.get("/metrics").text
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}  # fmt: skip
    assert samples[("privbandits_serve_decisions_total", ())] == 2
    assert samples[("privbandits_serve_decision_repeats_total", ())] == 1
    assert samples[("privbandits_serve_rewards_total", ())] == 1
    assert samples[("privbandits_serve_reward_duplicates_total", ())] == 1
    assert samples[("privbandits_serve_open_events", ())] == 1
    assert samples[("privbandits_serve_refused_total", (("status", "404"),))] == 1
    assert not any(name == "privbandits_serve_privacy_spent" for name, _ in samples)  # plaintext: nothing spent
    assert samples[("privbandits_serve_request_seconds_count", (("endpoint", "decide"),))] == 3


def test_the_python_client_speaks_the_api(served: Served) -> None:
    client = ServeClient(token=served.token, http=served.client)
    decision = client.decide("c1", "u9", ROWS, arms=[2, 0])
    assert decision.arm in (0, 2) and decision.event_id == "c1"
    assert client.reward("c1", 0.5).duplicate is False
    assert client.reward("c1", 0.5).duplicate is True
    assert client.health()["model_version"] == 1 and client.ledger()["events"]["rewarded"] == 1
    assert "privbandits_serve_rewards_total 1.0" in client.metrics()
    try:
        client.reward("nope", 1.0)
    except ServeError as exc:
        assert (exc.status, exc.field) == (404, "event_id")
    else:
        raise AssertionError("an unknown event was rewarded")
