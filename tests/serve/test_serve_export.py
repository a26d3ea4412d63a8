"""A served party's decision log: exported as BanditFeedback and DSJSON, read back the same, refused when it cannot
be one log."""

from __future__ import annotations

import numpy as np
import pytest
from cli_runner import separate
from conftest import Clock, learner, open_service
from serve_process import write_reference

from privbandits.cli import app
from privbandits.logs.files import load_log
from privbandits.serve.decider import DecideInput, Decision
from privbandits.serve.export import decision_log
from privbandits.validation import InvalidInputError


def _served(tmp_path, policy: str = "epsilon-greedy"):
    service = open_service(tmp_path / "reference.serve.sqlite", learner(policy), Clock())
    rng = np.random.default_rng(3)
    asked = {f"e{i}": rng.normal(size=(3, 2)) for i in range(12)}
    for event_id, rows in asked.items():
        arms = (0, 2) if event_id == "e4" else None
        service.decide(DecideInput(event_id, f"u{int(event_id[1:]) % 3}", rows, arms))
    for i in (5, 0, 7, 3, 4, 9, 1):  # out of order; e2, e6, e8, e10 and e11 stay open (not in the log)
        service.reward(f"e{i}", float(i % 2))
    return service, asked


def test_the_log_holds_the_rewarded_events_in_decision_order(tmp_path) -> None:
    service, asked = _served(tmp_path)
    log = decision_log(service.store)
    logged = ("e0", "e1", "e3", "e4", "e5", "e7", "e9")
    assert log.event_id == logged and log.n_rounds == 7 and log.n_actions == 3
    stored = {event_id: service.store.get(event_id) for event_id in logged}
    np.testing.assert_array_equal(log.action, [stored[e].event.arm for e in logged])
    np.testing.assert_array_equal(log.pscore, [stored[e].event.propensity for e in logged])
    np.testing.assert_array_equal(log.reward, [float(int(e[1:]) % 2) for e in logged])
    np.testing.assert_array_equal(log.context, np.stack([asked[e].reshape(-1) for e in logged]))
    service.close()


def test_a_deterministic_policy_is_logged_with_propensity_one(tmp_path) -> None:
    service, _ = _served(tmp_path, "linucb")
    assert decision_log(service.store).pscore.tolist() == [1.0] * 7
    service.close()


@pytest.mark.parametrize("suffix", [".npz", ".dsjson"])
def test_the_exported_log_reads_back_the_same(tmp_path, suffix: str) -> None:
    service, _ = _served(tmp_path)
    expected = decision_log(service.store)
    service.close()
    service_file = write_reference(tmp_path, {"n_arms": 3, "dim": 2, "policy": "epsilon-greedy", "seed": 5})
    target = tmp_path / f"log{suffix}"
    result = separate().invoke(app, ["serve-export", str(service_file), str(target)])
    assert result.exit_code == 0, result.stderr
    assert f"wrote {target}: 7 rewarded events, 3 arms" in result.stderr
    back = load_log(target)
    for name in ("action", "reward", "pscore", "context"):
        np.testing.assert_allclose(getattr(back, name), getattr(expected, name), rtol=0, atol=1e-12, err_msg=name)
    assert (back.n_rounds, back.n_actions, back.event_id) == (7, 3, expected.event_id)


def test_a_log_needs_one_shape_of_context_and_enough_actions(tmp_path) -> None:
    service, _ = _served(tmp_path)
    with pytest.raises(InvalidInputError, match=r"n_actions must be above every arm in the log \(largest 2\), got 2"):
        decision_log(service.store, 2)
    one_row = DecideInput("wide", "u1", np.ones((1, 2)))  # another decider's shape, journalled as such
    service.store.add_decision(one_row, "sha", Decision(0, None, 0), deadline=2e9)
    service.store.close_event("wide", 1.0)
    with pytest.raises(InvalidInputError, match=r"event 'wide' sent features of shape \(1, 2\), the log's first"):
        decision_log(service.store)
    service.close()


def test_an_empty_store_is_one_line(tmp_path) -> None:
    service_file = write_reference(tmp_path, {"n_arms": 3, "dim": 2, "policy": "linucb"})
    result = separate().invoke(app, ["serve-export", str(service_file), str(tmp_path / "log.npz")])
    assert result.exit_code == 2 and "has not served yet" in result.stderr
    service = open_service(tmp_path / "reference.serve.sqlite", learner("linucb", seed=None), Clock())
    service.close()
    result = separate().invoke(app, ["serve-export", str(service_file), str(tmp_path / "log.npz")])
    assert result.exit_code == 2 and "holds no rewarded event: there is no decision log yet" in result.stderr
