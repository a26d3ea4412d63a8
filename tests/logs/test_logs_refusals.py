"""Bad logs are refused with one line naming the field, the allowed values and the value given (issue 49): one
test per refusal, each with its exact message; and ``privbandits logs`` refuses bad input with exit code 2."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from bad_input import refused

from privbandits.logs import (
    LoggedFeedback,
    from_bandit_feedback,
    load_npz,
    read_dsjson,
    synthetic_feedback,
    to_bandit_feedback,
    write_dsjson,
)
from privbandits.validation import InvalidInputError

NAN, INF = float("nan"), float("inf")


def feedback(**changes) -> dict:
    """A small valid BanditFeedback dict (4 rounds, 3 actions, with pi_b), with ``changes``."""
    pi_b = np.array([[0.5, 0.25, 0.25]] * 4)
    base = {"n_rounds": 4, "n_actions": 3, "context": np.ones((4, 2)), "action": np.array([0, 1, 2, 0]),
            "reward": np.array([1.0, 0.0, 1.0, 0.0]), "pscore": np.array([0.5, 0.25, 0.25, 0.5]),
            "pi_b": pi_b[:, :, np.newaxis], "position": None}  # fmt: skip
    return {**base, **changes}


def refuses(message: str, **changes) -> None:
    with pytest.raises(InvalidInputError) as caught:
        from_bandit_feedback(feedback(**changes))
    assert str(caught.value) == message


def test_the_valid_example_is_accepted():
    assert from_bandit_feedback(feedback()).n_rounds == 4


def test_a_missing_key_is_named():
    with pytest.raises(InvalidInputError) as caught:
        from_bandit_feedback({key: value for key, value in feedback().items() if key != "pscore"})
    assert str(caught.value) == (
        "BanditFeedback has no key 'pscore'; required keys: n_rounds, n_actions, context, action, reward, pscore"
    )


def test_an_unknown_key_is_named():
    refuses(
        "BanditFeedback has unknown key 'pscores'; allowed keys: n_rounds, n_actions, context, action, reward, "
        "pscore, action_context, position, expected_reward, pi_b, event_id, timestamp",
        pscores=np.ones(4),
    )


def test_pscore_zero_is_refused():
    refuses("pscore must be in (0, 1], got 0.0 at round 1", pscore=np.array([0.5, 0.0, 0.25, 0.5]), pi_b=None)


def test_pscore_above_one_is_refused():
    refuses("pscore must be in (0, 1], got 1.5 at round 3", pscore=np.array([0.5, 0.25, 0.25, 1.5]), pi_b=None)


def test_an_action_array_of_the_wrong_length_is_refused():
    refuses("action must have shape (n_rounds,) = (4,), got (3,)", action=np.array([0, 1, 2]))


def test_an_action_outside_the_actions_is_refused():
    refuses("action must be in [0, n_actions) = [0, 3), got 3 at round 2", action=np.array([0, 1, 3, 0]))


def test_fractional_actions_are_refused():
    refuses("action must be integers, got dtype float64", action=np.array([0, 1, 2.5, 0]))


def test_a_context_of_the_wrong_shape_is_refused():
    refuses("context must have shape (n_rounds, d) = (4, d), got (5, 2)", context=np.ones((5, 2)))


def test_a_nan_context_is_refused():
    context = np.ones((4, 2))
    context[2, 1] = NAN
    refuses("context must be finite (no NaN or inf), got nan at [2, 1]", context=context)


def test_an_infinite_reward_is_refused():
    refuses("reward must be finite (no NaN or inf), got inf at [0]", reward=np.array([INF, 0.0, 1.0, 0.0]))


def test_pi_b_rows_not_summing_to_one_are_refused():
    pi_b = np.array([[0.5, 0.25, 0.25]] * 4)
    pi_b[1] = [0.5, 0.25, 0.2]
    refuses("pi_b rows must sum to 1 (within 1e-06), got 0.95 at round 1", pi_b=pi_b)


def test_pi_b_of_the_wrong_shape_is_refused():
    refuses("pi_b must have shape (n_rounds, n_actions) = (4, 3), got (4, 2)", pi_b=np.full((4, 2), 0.5))


def test_pi_b_with_several_slots_is_refused():
    refuses(
        "pi_b must have shape (n_rounds, n_actions) or (n_rounds, n_actions, 1) (one slot), got (4, 3, 2)",
        pi_b=np.full((4, 3, 2), 1 / 3),
    )


def test_a_pscore_that_is_not_pi_b_of_the_logged_action_is_refused():
    refuses(
        "pscore must equal pi_b[t, action[t]] (within 1e-06), got pscore 0.25 and pi_b 0.5 at round 0",
        pscore=np.array([0.25, 0.25, 0.25, 0.5]),
    )


def test_expected_reward_of_the_wrong_shape_is_refused():
    refuses("expected_reward must have shape (n_rounds, n_actions) = (4, 3), got (4,)", expected_reward=np.zeros(4))


def test_n_rounds_must_be_a_positive_integer():
    refuses("n_rounds must be an integer >= 1, got 4.0", n_rounds=4.0)


def test_a_negative_position_is_refused():
    refuses("position must be >= 0 (slots numbered from 0), got -1 at round 0", position=np.array([-1, 0, 1, 2]))


def test_event_ids_must_be_one_string_per_round():
    refuses("event_id must have one string per round (n_rounds = 4), got 2", event_id=np.array(["a", "b"]))


def test_a_log_is_read_only():
    log = from_bandit_feedback(feedback())
    with pytest.raises(ValueError, match="read-only"):
        log.reward[0] = 2.0


# -- files ----------------------------------------------------------------------------------------


def test_a_file_that_is_not_npz_is_refused(tmp_path):
    path = tmp_path / "log.npz"
    path.write_text("n_rounds,4\n")
    with pytest.raises(InvalidInputError) as caught:
        load_npz(path)
    assert str(caught.value) == f"{path} is not a .npz archive (a zip of .npy arrays); got a file starting b'n_ro'"


def test_an_npz_with_pickled_objects_is_refused(tmp_path):
    path = tmp_path / "log.npz"
    np.savez(path, **{key: value for key, value in to_bandit_feedback(from_bandit_feedback(feedback())).items()
                      if value is not None}, extra=np.array([{"a": 1}], dtype=object))  # fmt: skip
    with pytest.raises(InvalidInputError) as caught:
        load_npz(path)
    assert str(caught.value) == f"{path} holds pickled objects; BanditFeedback arrays must be numbers or strings"
    assert zipfile.is_zipfile(path)


def test_an_npz_missing_a_key_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "log.npz"
    np.savez(path, n_rounds=4, n_actions=3, context=np.ones((4, 2)), action=np.zeros(4, dtype=int), reward=np.ones(4))
    with pytest.raises(InvalidInputError) as caught:
        load_npz(path)
    assert str(caught.value) == (
        f"{path} has no key 'pscore'; required keys: n_rounds, n_actions, context, action, reward, pscore"
    )


def dsjson(tmp_path: Path, change) -> Path:
    """A two-line DSJSON file whose second line is ``change``d."""
    path = write_dsjson(synthetic_feedback(2, 3, 2, seed=0), tmp_path / "log.dsjson")
    first, second = path.read_text().splitlines()
    event = json.loads(second)
    change(event)
    path.write_text(first + "\n" + (event if isinstance(event, str) else json.dumps(event)) + "\n")
    return path


def dsjson_refuses(tmp_path: Path, change, message: str) -> None:
    path = dsjson(tmp_path, change)
    with pytest.raises(InvalidInputError) as caught:
        read_dsjson(path)
    assert str(caught.value) == f"{path} line 2: {message}"


def test_a_dsjson_line_without_its_cost_is_refused(tmp_path):
    dsjson_refuses(tmp_path, lambda e: e.pop("_label_cost"), "no key '_label_cost'; a DSJSON decision needs "
                   "_label_cost, _label_probability, _label_Action, _labelIndex, a, p, c")  # fmt: skip


def test_a_dsjson_probability_outside_0_1_is_refused(tmp_path):
    dsjson_refuses(tmp_path, lambda e: e.update(_label_probability=0),
                   "_label_probability must be a number in (0, 1], got 0")  # fmt: skip


def test_a_dsjson_action_outside_1_to_n_is_refused(tmp_path):
    dsjson_refuses(tmp_path, lambda e: e.update(_label_Action=0),
                   "_label_Action must be an integer in [1, 3] (actions numbered from 1), got 0")  # fmt: skip


def test_a_dsjson_label_index_that_disagrees_is_refused(tmp_path):
    dsjson_refuses(tmp_path, lambda e: e.update(_label_Action=2, _labelIndex=0, a=[2, 1, 3]),
                   "_labelIndex must be _label_Action - 1 = 1, got 0")  # fmt: skip


def test_a_dsjson_nan_cost_is_refused(tmp_path):
    dsjson_refuses(tmp_path, lambda e: e.update(_label_cost=NAN),
                   "_label_cost must be a finite number (the negative reward), got nan")  # fmt: skip


def test_dsjson_action_features_that_change_are_refused(tmp_path):
    dsjson_refuses(tmp_path, lambda e: e["c"]["_multi"][0]["action"].update(a0=9.0),
                   "c._multi must hold the same action features on every line (one action_context)")  # fmt: skip


def test_a_dsjson_line_that_is_not_json_is_refused(tmp_path):
    path = tmp_path / "bad.dsjson"
    path.write_text('{"_label_cost": -1.0,\n')
    with pytest.raises(InvalidInputError) as caught:
        read_dsjson(path)
    why = "Expecting property name enclosed in double quotes at column 22"
    assert str(caught.value) == f"{path} line 1: not JSON ({why})"


# -- the command line -----------------------------------------------------------------------------


def test_convert_writes_the_other_format(tmp_path):
    from typer.testing import CliRunner

    from privbandits.cli import app

    write_dsjson(synthetic_feedback(20, seed=0), tmp_path / "in.dsjson")
    result = CliRunner().invoke(app, ["logs", "convert", str(tmp_path / "in.dsjson"), str(tmp_path / "out.npz")])
    assert result.exit_code == 0, result.output
    assert load_npz(tmp_path / "out.npz").equals(read_dsjson(tmp_path / "in.dsjson"))


def test_convert_refuses_an_unknown_suffix(tmp_path):
    write_dsjson(synthetic_feedback(5, seed=0), tmp_path / "in.dsjson")
    refused(tmp_path, ["logs", "convert", "in.dsjson", "out.csv"], "error: OUT must be a .npz file (BanditFeedback) "
            "or a .dsjson, .jsonl or .json file (DSJSON lines), got 'out.csv'")  # fmt: skip


def test_convert_refuses_a_missing_input(tmp_path):
    refused(tmp_path, ["logs", "convert", "absent.npz", "out.dsjson"], "error: IN 'absent.npz' does not exist")


def test_convert_refuses_a_bad_log_in_one_line(tmp_path):
    path = dsjson(tmp_path, lambda e: e.update(_label_probability=1.5))
    refused(tmp_path, ["logs", "convert", path.name, "out.npz"],
            f"{path.name} line 2: _label_probability must be a number in (0, 1], got 1.5")  # fmt: skip


def test_synthetic_refuses_a_bad_option(tmp_path):
    refused(tmp_path, ["logs", "synthetic", "s.npz", "--policy", "greedy"],
            "error: synthetic_feedback: policy must be one of 'softmax', 'epsilon_greedy', got 'greedy'")  # fmt: skip


def test_a_minimal_log_needs_no_optional_field():
    log = LoggedFeedback(n_rounds=1, n_actions=1, context=[[0.0]], action=[0], reward=[0.0], pscore=[1.0])
    assert log.pi_b is None and log.dim == 1
