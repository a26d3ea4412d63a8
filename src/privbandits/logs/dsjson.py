"""Vowpal Wabbit's Decision Service JSON (DSJSON): one JSON object per line, one decision each.

What a line holds (VW's wiki page "DSJSON" and its ``test/train-sets/dsjson_cb.json``), and where each
part of a :class:`~privbandits.logs.LoggedFeedback` goes:

================================  ==========================================================
DSJSON                            LoggedFeedback
================================  ==========================================================
``EventId``                       ``event_id[t]`` (the round number ``"t"`` when the log has none)
``Timestamp``                     ``timestamp[t]`` (omitted when the log has none)
``Version``                       ``"1"``
``_label_Action``                 ``action[t] + 1`` (VW numbers actions from 1)
``_labelIndex``                   ``action[t]`` (the chosen action's index in ``_multi``, from 0)
``_label_cost``                   ``-reward[t]`` (VW minimises a cost)
``_label_probability``            ``pscore[t]``
``a``, ``p``                      the chosen action first (1-based), then, when the log has
                                  ``pi_b``, every other action in order, with ``p`` their
                                  probabilities ``pi_b[t, a - 1]``; without ``pi_b``,
                                  ``a = [action + 1]`` and ``p = [pscore]``
``c.shared``                      ``context[t]``: features ``x<j>`` = column j
``c._multi[a].action``            ``action_context[a]``: features ``a<j>`` = column j
                                  (the same on every line; ``_tag`` is the action's number)
================================  ==========================================================

Features are written sparsely, as VW reads them: a zero is left out, except each row's last column,
which is always written so the width can be read back. Floats are written by Python's shortest
exact repr, so a round trip is exact. DSJSON cannot carry ``position``, ``expected_reward``, nor
action features that change from round to round; :func:`read_dsjson` refuses the last.

:func:`read_dsjson` also reads decisions other programs logged: features in other namespaces become
further columns after the numbered ones, named ``namespace.feature`` (a string value ``v`` is the
indicator column ``namespace.feature=v``, as VW hashes it), in name order.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from privbandits.logs.feedback import LoggedFeedback
from privbandits.validation import InvalidInputError

SHARED, ACTION = "shared", "action"
"""The namespaces privbandits writes a round's context and each action's features in."""
REQUIRED = ("_label_cost", "_label_probability", "_label_Action", "_labelIndex", "a", "p", "c")
"""The keys every decision line must have (a decision without its reward is not logged feedback)."""
NUMBERED = {SHARED: re.compile(r"shared\.x(\d+)"), ACTION: re.compile(r"action\.a(\d+)")}


# -- writing ---------------------------------------------------------------------------------------


def _sparse(row: np.ndarray, prefix: str) -> dict[str, float]:
    """Non-zero columns of ``row`` as ``{prefix<j>: value}``, and always the last column (the width)."""
    last = row.size - 1
    return {f"{prefix}{j}": float(row[j]) for j in range(row.size) if row[j] != 0 or j == last}


def _multi(log: LoggedFeedback) -> str:
    """The ``_multi`` array (one example per action), as JSON text: the same on every line."""
    examples: list[dict[str, Any]] = []
    for a in range(log.n_actions):
        example: dict[str, Any] = {"_tag": str(a)}
        if log.action_context is not None and log.action_context.shape[1]:
            example[ACTION] = _sparse(log.action_context[a], "a")
        examples.append(example)
    return json.dumps(examples, separators=(",", ":"))


def _ranking(log: LoggedFeedback, t: int) -> tuple[list[int], list[float]]:
    """``a`` and ``p``: the chosen action first (1-based), then the others when ``pi_b`` is known."""
    chosen = int(log.action[t])
    if log.pi_b is None:
        return [chosen + 1], [float(log.pscore[t])]
    order = [chosen, *(a for a in range(log.n_actions) if a != chosen)]
    return [a + 1 for a in order], [float(log.pi_b[t, a]) for a in order]


def _line(log: LoggedFeedback, t: int, multi: str) -> str:
    chosen, reward = int(log.action[t]), float(log.reward[t])
    actions, probabilities = _ranking(log, t)
    event: dict[str, Any] = {
        "_label_cost": -reward,
        "_label_probability": float(log.pscore[t]),
        "_label_Action": chosen + 1,
        "_labelIndex": chosen,
        "EventId": str(t) if log.event_id is None else log.event_id[t],
    }
    if log.timestamp is not None:
        event["Timestamp"] = log.timestamp[t]
    shared = _sparse(log.context[t], "x") if log.dim else {}
    event.update({"Version": "1", "a": actions, "c": {SHARED: shared, "_multi": None}, "p": probabilities})
    return json.dumps(event, separators=(",", ":")).replace('"_multi":null', f'"_multi":{multi}', 1)


def write_dsjson(log: LoggedFeedback, path: str | Path) -> Path:
    """Write the log as DSJSON lines to ``path``; returns the path."""
    path = Path(path)
    multi = _multi(log)
    with path.open("w", encoding="utf-8") as handle:
        for t in range(log.n_rounds):
            handle.write(_line(log, t, multi))
            handle.write("\n")
    return path


# -- reading ---------------------------------------------------------------------------------------


class _Line:
    """Where a value came from, for one-line refusals: ``PATH line N: ...``."""

    def __init__(self, path: Path, number: int) -> None:
        self.path, self.number = path, number

    def fail(self, message: str) -> InvalidInputError:
        return InvalidInputError(f"{self.path} line {self.number}: {message}")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _flatten(value: object, name: str, out: dict[str, float]) -> None:
    """VW's JSON features under ``name``: numbers, strings (indicators), booleans, namespaces (objects),
    arrays of numbers or of namespaces; keys starting with ``_`` are not features."""
    if _is_number(value):
        out[name] = float(value)  # type: ignore[arg-type]
    elif isinstance(value, bool):
        out[name] = 1.0 if value else 0.0
    elif isinstance(value, str):
        out[f"{name}={value}"] = 1.0
    elif isinstance(value, dict):
        for key, item in value.items():
            if not key.startswith("_"):
                _flatten(item, f"{name}.{key}" if name else key, out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _flatten(item, name if isinstance(item, dict) else f"{name}[{index}]", out)


def _features(value: object) -> dict[str, float]:
    out: dict[str, float] = {}
    _flatten(value, "", out)
    return out


def _columns(rows: list[dict[str, float]], namespace: str) -> tuple[int, dict[str, int]]:
    """The width and each feature name's column: the numbered features ``0 .. max`` first, then every other
    feature name in name order."""
    pattern, numbered, others = NUMBERED[namespace], {}, set()
    for row in rows:
        for name in row:
            match = pattern.fullmatch(name)
            if match:
                numbered[name] = int(match.group(1))
            else:
                others.add(name)
    width = max(numbered.values(), default=-1) + 1
    where = {**numbered, **{name: width + j for j, name in enumerate(sorted(others))}}
    return width + len(others), where


def _matrix(rows: list[dict[str, float]], namespace: str) -> np.ndarray:
    width, where = _columns(rows, namespace)
    matrix = np.zeros((len(rows), width))
    for i, row in enumerate(rows):
        for name, value in row.items():
            matrix[i, where[name]] = value
    return matrix


def _lines(path: Path) -> Iterator[tuple[_Line, dict[str, Any]]]:
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            line = _Line(path, number)
            try:
                event = json.loads(text.rstrip("\r\n"))
            except json.JSONDecodeError as error:
                raise line.fail(f"not JSON ({error.msg} at column {error.colno})") from None
            if not isinstance(event, dict):
                raise line.fail(f"a decision must be a JSON object, got {type(event).__name__}")
            yield line, event


class _Reader:
    """Decisions gathered line by line, each checked as it is read."""

    def __init__(self) -> None:
        self.n_actions: int | None = None
        self.multi: object = None
        self.columns: dict[str, list[Any]] = {key: [] for key in ("action", "reward", "pscore", "a", "p", "ids", "ts")}
        self.shared: list[dict[str, float]] = []

    def add(self, line: _Line, event: dict[str, Any]) -> None:
        missing = [key for key in REQUIRED if key not in event]
        if missing:
            raise line.fail(f"no key {missing[0]!r}; a DSJSON decision needs {', '.join(REQUIRED)}")
        context = event["c"]
        if not isinstance(context, dict) or not isinstance(context.get("_multi"), list) or not context["_multi"]:
            raise line.fail("c must be an object whose _multi is a non-empty array (one example per action)")
        self._actions(line, context["_multi"])
        chosen = self._chosen(line, event)
        cost, probability = event["_label_cost"], event["_label_probability"]
        if not _is_number(cost) or not math.isfinite(cost):
            raise line.fail(f"_label_cost must be a finite number (the negative reward), got {cost!r}")
        if not _is_number(probability) or not 0 < probability <= 1:
            raise line.fail(f"_label_probability must be a number in (0, 1], got {probability!r}")
        self.columns["action"].append(chosen)
        self.columns["reward"].append(-float(cost))
        self.columns["pscore"].append(float(probability))
        self.columns["a"].append(event["a"])
        self.columns["p"].append(event["p"])
        self.columns["ids"].append(event.get("EventId"))
        self.columns["ts"].append(event.get("Timestamp"))
        self.shared.append(_features({key: value for key, value in context.items() if key != "_multi"}))

    def _actions(self, line: _Line, multi: list[Any]) -> None:
        if self.n_actions is None:
            self.n_actions, self.multi = len(multi), multi
        elif len(multi) != self.n_actions:
            raise line.fail(f"c._multi must list the {self.n_actions} actions of line 1's, got {len(multi)}")
        elif multi != self.multi:
            raise line.fail("c._multi must hold the same action features on every line (one action_context)")

    def _chosen(self, line: _Line, event: dict[str, Any]) -> int:
        k, label, index = self.n_actions, event["_label_Action"], event["_labelIndex"]
        if not isinstance(label, int) or isinstance(label, bool) or not 1 <= label <= (k or 0):
            raise line.fail(f"_label_Action must be an integer in [1, {k}] (actions numbered from 1), got {label!r}")
        if index != label - 1:
            raise line.fail(f"_labelIndex must be _label_Action - 1 = {label - 1}, got {index!r}")
        ranking, probabilities = event["a"], event["p"]
        if not isinstance(ranking, list) or not ranking or ranking[0] != label:
            raise line.fail(f"a must be a list of actions starting with _label_Action = {label}, got {ranking!r}")
        if not isinstance(probabilities, list) or len(probabilities) != len(ranking):
            raise line.fail(f"p must list one probability per action in a ({len(ranking)}), got {probabilities!r}")
        return label - 1

    def pi_b(self, path: Path) -> np.ndarray | None:
        """The logging distribution, when every line's ``a`` ranks all the actions."""
        k = self.n_actions or 0
        if any(len(ranking) != k for ranking in self.columns["a"]):
            return None
        pi_b = np.zeros((len(self.columns["a"]), k))
        for t, (ranking, probabilities) in enumerate(zip(self.columns["a"], self.columns["p"], strict=True)):
            if sorted(ranking) != list(range(1, k + 1)):
                raise InvalidInputError(f"{path}: a must rank each action 1..{k} once, got {ranking!r} in decision {t}")
            if not all(_is_number(p) for p in probabilities):
                raise InvalidInputError(f"{path}: p must be numbers, got {probabilities!r} in decision {t}")
            pi_b[t, np.asarray(ranking) - 1] = probabilities
        return pi_b

    def strings(self, key: str) -> tuple[str, ...] | None:
        values = self.columns[key]
        return tuple(values) if all(isinstance(value, str) for value in values) else None

    def log(self, path: Path) -> LoggedFeedback:
        if self.n_actions is None:
            raise InvalidInputError(f"{path} holds no decisions (DSJSON: one JSON object per line)")
        actions = [_features(example) for example in self.multi]  # type: ignore[attr-defined]
        action_context = _matrix(actions, ACTION) if any(actions) else None
        return LoggedFeedback(
            n_rounds=len(self.columns["action"]),
            n_actions=self.n_actions,
            context=_matrix(self.shared, SHARED),
            action=np.array(self.columns["action"], dtype=np.int64),
            reward=np.array(self.columns["reward"]),
            pscore=np.array(self.columns["pscore"]),
            action_context=action_context,
            pi_b=self.pi_b(path),
            event_id=self.strings("ids"),
            timestamp=self.strings("ts"),
        )


def read_dsjson(path: str | Path) -> LoggedFeedback:
    """Read DSJSON decisions (as :func:`write_dsjson` writes them, or as VW's decision service logs them).

    Every line must carry its label (``_label_cost``, ``_label_probability``, ``_label_Action``,
    ``_labelIndex``), ``a``, ``p`` and ``c`` with ``_multi``; a bad line is refused with its number and
    the field. ``pi_b`` is read when every line's ``a`` ranks all the actions (``p`` their probabilities).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"DSJSON file {path} does not exist")
    reader = _Reader()
    try:
        for line, event in _lines(path):
            reader.add(line, event)
    except UnicodeDecodeError as error:
        raise InvalidInputError(f"{path} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    return reader.log(path)
