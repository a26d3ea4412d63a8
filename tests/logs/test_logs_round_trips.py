"""Round trips of logged feedback (issue 49 item 1, issue 46 item 5): BanditFeedback dict and .npz, DSJSON, on
synthetic logs and on the Open Bandit Dataset sample; what DSJSON cannot carry is named and only that differs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privbandits.datasets.cache import shared_data
from privbandits.logs import (
    LoggedFeedback,
    from_bandit_feedback,
    load_log,
    load_npz,
    obd_feedback,
    read_dsjson,
    save_log,
    save_npz,
    synthetic_feedback,
    to_bandit_feedback,
    write_dsjson,
)

OBD = shared_data("obd", "random", "all")
needs_obd = pytest.mark.skipif(
    OBD is None, reason="the Open Bandit Dataset sample is absent ($PRIVBANDITS_SHARED_DATA or ../shared/data/obd)"
)
NOT_IN_DSJSON = ("position", "expected_reward")
"""What DSJSON cannot carry."""


@pytest.fixture(scope="module")
def obd() -> LoggedFeedback:
    return obd_feedback(OBD)


def same(a: LoggedFeedback, b: LoggedFeedback, exclude: tuple[str, ...] = ()) -> None:
    assert a.equals(b, exclude), a.differences(b)


@pytest.mark.parametrize("reward_type", ["linear", "logistic"])
@pytest.mark.parametrize("policy", ["softmax", "epsilon_greedy"])
def test_synthetic_round_trips_exactly_through_the_dict_npz_and_dsjson(tmp_path, reward_type, policy):
    log = synthetic_feedback(300, 6, 5, reward_type=reward_type, policy=policy, seed=4)
    same(from_bandit_feedback(to_bandit_feedback(log)), log)
    same(load_npz(save_npz(log, tmp_path / "log.npz")), log)
    back = read_dsjson(write_dsjson(log, tmp_path / "log.dsjson"))
    assert back.expected_reward is None and back.pi_b is not None  # pi_b travels in a and p
    same(back, log, exclude=NOT_IN_DSJSON)
    bf_again = to_bandit_feedback(read_dsjson(write_dsjson(from_bandit_feedback(to_bandit_feedback(log)),
                                                           tmp_path / "again.jsonl")))  # fmt: skip
    same(from_bandit_feedback(bf_again), log, exclude=NOT_IN_DSJSON)


def test_the_bandit_feedback_dict_has_obps_keys_and_shapes():
    log = synthetic_feedback(50, 4, 3, seed=1)
    feedback = to_bandit_feedback(log)
    assert set(feedback) == {"n_rounds", "n_actions", "context", "action_context", "action", "position", "reward",
                             "pscore", "expected_reward", "pi_b", "event_id"}  # fmt: skip
    assert feedback["n_rounds"] == 50 and type(feedback["n_rounds"]) is int and feedback["position"] is None
    assert feedback["pi_b"].shape == (50, 4, 1) and feedback["expected_reward"].shape == (50, 4)
    assert feedback["context"].shape == (50, 3) and feedback["action_context"].shape == (4, 3)
    two_d = {**feedback, "pi_b": feedback["pi_b"][:, :, 0]}
    same(from_bandit_feedback(two_d), log)
    feedback["reward"][0] = 99.0  # a copy: the log is unchanged
    assert log.reward[0] != 99.0


def test_a_log_without_optional_fields_round_trips(tmp_path):
    log = LoggedFeedback(n_rounds=3, n_actions=2, context=np.zeros((3, 0)), action=[0, 1, 1],
                         reward=[1.0, 0.0, -0.0], pscore=[0.5, 0.25, 1.0])  # fmt: skip
    same(load_npz(save_npz(log, tmp_path / "min.npz")), log)
    back = read_dsjson(write_dsjson(log, tmp_path / "min.dsjson"))
    assert back.event_id == ("0", "1", "2")  # the round numbers stand in for missing ids
    same(back, log, exclude=("event_id",))
    assert np.signbit(back.reward[2])  # -0.0 stays -0.0: VW's cost 0.0, negated


def test_dsjson_lines_follow_vws_layout(tmp_path):
    log = synthetic_feedback(2, 3, 2, seed=0)
    first = json.loads((write_dsjson(log, tmp_path / "x.dsjson")).read_text().splitlines()[0])
    chosen = int(log.action[0])
    assert first["_label_Action"] == chosen + 1 and first["_labelIndex"] == chosen
    assert first["_label_cost"] == -log.reward[0] and first["_label_probability"] == log.pscore[0]
    assert first["a"][0] == chosen + 1 and sorted(first["a"]) == [1, 2, 3] and first["p"][0] == log.pi_b[0, chosen]
    assert first["EventId"] == "0-0" and first["Version"] == "1"
    assert first["c"]["shared"] == {"x0": log.context[0, 0], "x1": log.context[0, 1]}
    assert [example["_tag"] for example in first["c"]["_multi"]] == ["0", "1", "2"]


def test_reads_a_decision_service_log_with_string_features(tmp_path):
    """A line as VW's decision service logs it (test/train-sets/dsjson_cb.json's layout, values made up)."""
    line = {"_label_cost": -1.0, "_label_probability": 0.8, "_label_Action": 2, "_labelIndex": 1,
            "o": [{"v": 1.0, "EventId": "e1", "ActionTaken": False}], "Timestamp": "2021-02-04T16:31:29.2460000Z",
            "Version": "1", "EventId": "e1", "a": [2, 1], "p": [0.8, 0.2],
            "c": {"User": [{"time": "Morning", "age": 3}],
                  "_multi": [{"_tag": "tea", "i": {"id": "tea"}}, {"_tag": "cof", "i": {"id": "coffee", "hot": 1}}]},
            "VWState": {"m": "x"}}  # fmt: skip
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(line) + "\n\n" + json.dumps({**line, "EventId": "e2"}) + "\n")
    log = read_dsjson(path)
    assert (log.n_rounds, log.n_actions, log.event_id) == (2, 2, ("e1", "e2"))
    assert log.action.tolist() == [1, 1] and log.reward.tolist() == [1.0, 1.0] and log.pscore.tolist() == [0.8, 0.8]
    assert log.context.tolist() == [[3.0, 1.0]] * 2  # User.age, User.time=Morning
    assert log.action_context.tolist() == [[0.0, 0.0, 1.0], [1.0, 1.0, 0.0]]  # i.hot, i.id=coffee, i.id=tea
    assert log.pi_b.tolist() == [[0.2, 0.8]] * 2


def test_take_keeps_the_chosen_rounds():
    log = synthetic_feedback(10, 3, 2, seed=2)
    part = log.take([4, 1])
    assert part.n_rounds == 2 and part.event_id == ("2-4", "2-1") and part.pi_b.tolist() == log.pi_b[[4, 1]].tolist()


@needs_obd
def test_the_obd_sample_loads_into_the_typed_form(obd):
    assert (obd.n_rounds, obd.n_actions, obd.dim, obd.action_context.shape) == (10_000, 80, 23, (80, 41))
    assert set(obd.position.tolist()) == {0, 1, 2} and np.allclose(obd.pscore, 1 / 80)
    assert set(obd.reward.tolist()) == {0.0, 1.0} and obd.timestamp[0] == "2019-11-24T00:00:34.762830Z"
    assert obd.pi_b is None and obd.expected_reward is None and obd.event_id is None


@needs_obd
def test_the_obd_sample_round_trips_through_npz_and_dsjson(obd, tmp_path):
    same(load_npz(save_npz(obd, tmp_path / "obd.npz")), obd)
    same(from_bandit_feedback(to_bandit_feedback(obd)), obd)
    part = obd.take(slice(0, 500))  # DSJSON repeats the 80 items' features on every line: 7 kB a line
    back = load_log(save_log(part, tmp_path / "obd.dsjson"))
    assert back.event_id == tuple(str(t) for t in range(500))
    same(back, part, exclude=("position", "event_id"))


@needs_obd
def test_an_obd_folder_loads_by_path(obd):
    same(load_log(OBD), obd)
