"""Logged bandit feedback in one typed, validated form (issue 49 item 1).

:class:`LoggedFeedback` holds what a logging policy recorded, round by round: the context it saw,
the action it took, the reward that came back and the propensity of that action, with what
synthetic data adds (the expected reward of every action and the logging policy's distribution).
Every converter in :mod:`privbandits.logs` reads into it or writes from it, so a log is checked once,
here, whatever its format. A bad log is refused with one line naming the field, the allowed values
and the value given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from privbandits.validation import InvalidInputError, read_only

PI_B_TOLERANCE = 1e-6
"""How far a row of ``pi_b`` may sum from 1, and ``pscore`` differ from ``pi_b[t, action[t]]``."""


def _fail(message: str) -> InvalidInputError:
    return InvalidInputError(message)


def _count(value: object, name: str, low: int) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise _fail(f"{name} must be an integer >= {low}, got {value!r}")
    if value < low:
        raise _fail(f"{name} must be an integer >= {low}, got {value}")
    return int(value)


def _finite(array: np.ndarray, name: str) -> None:
    bad = np.argwhere(~np.isfinite(array))
    if bad.size:
        where = ", ".join(str(i) for i in bad[0])
        raise _fail(f"{name} must be finite (no NaN or inf), got {array[tuple(bad[0])]} at [{where}]")


def _floats(value: object, name: str, shape: tuple[int | None, ...], what: str) -> np.ndarray:
    """``value`` as float64 of ``shape`` (None: any length), finite."""
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise _fail(f"{name} must be an array of numbers of shape {what}, got {type(value).__name__}") from None
    if array.ndim != len(shape) or any(
        want is not None and got != want for got, want in zip(array.shape, shape, strict=True)
    ):
        raise _fail(f"{name} must have shape {what}, got {array.shape}")
    _finite(array, name)
    return array


def _integers(value: object, name: str, n_rounds: int) -> np.ndarray:
    array = np.asarray(value)
    if array.shape != (n_rounds,):
        raise _fail(f"{name} must have shape (n_rounds,) = ({n_rounds},), got {array.shape}")
    if array.dtype.kind == "f" and array.size and np.isfinite(array).all() and (array == np.round(array)).all():
        array = array.astype(np.int64)  # whole numbers stored as floats (CSV, JSON)
    if array.dtype.kind not in "iu":
        raise _fail(f"{name} must be integers, got dtype {array.dtype}")
    return np.array(array, dtype=np.int64)


def _strings(value: object, name: str, n_rounds: int) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
        raise _fail(f"{name} must be a sequence of {n_rounds} strings (one per round), got {type(value).__name__}")
    items = tuple(value)
    if len(items) != n_rounds:
        raise _fail(f"{name} must have one string per round (n_rounds = {n_rounds}), got {len(items)}")
    for t, item in enumerate(items):
        if not isinstance(item, str | np.str_):
            raise _fail(f"{name} must be strings, got {item!r} at round {t}")
    return tuple(str(item) for item in items)


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


@dataclass(frozen=True)
class LoggedFeedback:
    """Bandit feedback logged by a policy: one row per round.

    Arrays are copied, converted (float64; int64 for indices) and made read-only.

    Attributes
    ----------
    n_rounds, n_actions : int
        Rounds logged, and actions the policy chose among (numbered ``0 .. n_actions - 1``).
    context : ndarray of shape (n_rounds, d)
        What the policy saw at each round.
    action : ndarray of shape (n_rounds,)
        The action taken, in ``[0, n_actions)``.
    reward : ndarray of shape (n_rounds,)
        The reward observed for it.
    pscore : ndarray of shape (n_rounds,)
        The probability in (0, 1] with which the logging policy took that action.
    action_context : ndarray of shape (n_actions, d_a) or None
        Features of each action (row a describes action a).
    position : ndarray of shape (n_rounds,) or None
        The slot the action was shown in, numbered from 0 (Open Bandit Pipeline's convention).
    expected_reward : ndarray of shape (n_rounds, n_actions) or None
        ``E[reward | context_t, a]`` for every action: synthetic data's ground truth.
    pi_b : ndarray of shape (n_rounds, n_actions) or None
        The logging policy's distribution over the actions at each round; rows sum to 1 and
        ``pi_b[t, action[t]] == pscore[t]``.
    event_id, timestamp : tuple of str or None
        Per-round identifiers and times (ISO 8601), where the source has them.
    """

    n_rounds: int
    n_actions: int
    context: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    pscore: np.ndarray
    action_context: np.ndarray | None = None
    position: np.ndarray | None = None
    expected_reward: np.ndarray | None = None
    pi_b: np.ndarray | None = None
    event_id: tuple[str, ...] | None = None
    timestamp: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        n = _count(self.n_rounds, "n_rounds", 1)
        k = _count(self.n_actions, "n_actions", 1)
        values: dict[str, Any] = {
            "n_rounds": n,
            "n_actions": k,
            "context": _floats(self.context, "context", (n, None), f"(n_rounds, d) = ({n}, d)"),
            "action": self._checked_action(n, k),
            "reward": _floats(self.reward, "reward", (n,), f"(n_rounds,) = ({n},)"),
            "pscore": self._checked_pscore(n),
            "action_context": None,
            "position": None,
            "expected_reward": None,
            "pi_b": None,
            "event_id": None if self.event_id is None else _strings(self.event_id, "event_id", n),
            "timestamp": None if self.timestamp is None else _strings(self.timestamp, "timestamp", n),
        }
        if self.action_context is not None:
            what = f"(n_actions, d_a) = ({k}, d_a)"
            values["action_context"] = _floats(self.action_context, "action_context", (k, None), what)
        if self.position is not None:
            values["position"] = self._checked_position(n)
        if self.expected_reward is not None:
            what = f"(n_rounds, n_actions) = ({n}, {k})"
            values["expected_reward"] = _floats(self.expected_reward, "expected_reward", (n, k), what)
        if self.pi_b is not None:
            values["pi_b"] = self._checked_pi_b(n, k, values["action"], values["pscore"])
        for name, value in values.items():
            object.__setattr__(self, name, read_only(value) if isinstance(value, np.ndarray) else value)

    def _checked_action(self, n: int, k: int) -> np.ndarray:
        action = _integers(self.action, "action", n)
        bad = (action < 0) | (action >= k)
        if bad.any():
            t = _first(bad)
            raise _fail(f"action must be in [0, n_actions) = [0, {k}), got {action[t]} at round {t}")
        return action

    def _checked_pscore(self, n: int) -> np.ndarray:
        pscore = _floats(self.pscore, "pscore", (n,), f"(n_rounds,) = ({n},)")
        bad = ~((pscore > 0) & (pscore <= 1))
        if bad.any():
            t = _first(bad)
            raise _fail(f"pscore must be in (0, 1], got {pscore[t]} at round {t}")
        return pscore

    def _checked_position(self, n: int) -> np.ndarray:
        position = _integers(self.position, "position", n)
        if (position < 0).any():
            t = _first(position < 0)
            raise _fail(f"position must be >= 0 (slots numbered from 0), got {position[t]} at round {t}")
        return position

    def _checked_pi_b(self, n: int, k: int, action: np.ndarray, pscore: np.ndarray) -> np.ndarray:
        pi_b = _floats(self.pi_b, "pi_b", (n, k), f"(n_rounds, n_actions) = ({n}, {k})")
        if (pi_b < 0).any():
            t, a = np.argwhere(pi_b < 0)[0]
            raise _fail(f"pi_b must be probabilities >= 0, got {pi_b[t, a]} at [{t}, {a}]")
        sums = pi_b.sum(axis=1)
        bad = np.abs(sums - 1.0) > PI_B_TOLERANCE
        if bad.any():
            t = _first(bad)
            raise _fail(f"pi_b rows must sum to 1 (within {PI_B_TOLERANCE:g}), got {float(sums[t])} at round {t}")
        taken = pi_b[np.arange(n), action]
        bad = np.abs(taken - pscore) > PI_B_TOLERANCE
        if bad.any():
            t = _first(bad)
            raise _fail(
                f"pscore must equal pi_b[t, action[t]] (within {PI_B_TOLERANCE:g}), "
                f"got pscore {float(pscore[t])} and pi_b {float(taken[t])} at round {t}"
            )
        return pi_b

    @property
    def dim(self) -> int:
        """The context's width d."""
        return int(self.context.shape[1])

    def policy_value(self, pi: np.ndarray) -> float:
        """The true value of the policy ``pi`` (shape ``(n_rounds, n_actions)``, rows summing to 1) on these
        contexts, ``mean_t Σ_a pi[t, a] · expected_reward[t, a]``: the target of off-policy estimators on
        synthetic logs (refused when the log has no ``expected_reward``)."""
        if self.expected_reward is None:
            raise _fail("policy_value needs expected_reward (synthetic logs have it), got a log without it")
        shape = f"(n_rounds, n_actions) = ({self.n_rounds}, {self.n_actions})"
        weights = _floats(pi, "pi", (self.n_rounds, self.n_actions), shape)
        return float((weights * self.expected_reward).sum(axis=1).mean())

    def take(self, rounds: Sequence[int] | np.ndarray | slice) -> LoggedFeedback:
        """The log of the rounds ``rounds`` only (indices or a slice, in the order given; e.g. a bootstrap sample
        or the first hundred rounds), every per-round field cut alike."""
        index = np.arange(self.n_rounds)[rounds]
        per_round = ("context", "action", "reward", "pscore", "position", "expected_reward", "pi_b")
        values: dict[str, Any] = {field.name: getattr(self, field.name) for field in fields(self)}
        for name in per_round:
            if values[name] is not None:
                values[name] = values[name][index]
        for name in ("event_id", "timestamp"):
            if values[name] is not None:
                values[name] = tuple(values[name][t] for t in index)
        values["n_rounds"] = int(index.size)
        return LoggedFeedback(**values)

    def equals(self, other: LoggedFeedback, exclude: Sequence[str] = ()) -> bool:
        """Every field equal (arrays bit for bit, NaN never present), those in ``exclude`` aside."""
        for field in fields(self):
            if field.name in exclude:
                continue
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            if isinstance(mine, np.ndarray) and isinstance(theirs, np.ndarray):
                if mine.shape != theirs.shape or not np.array_equal(mine, theirs):
                    return False
            elif isinstance(mine, np.ndarray) or isinstance(theirs, np.ndarray) or mine != theirs:
                return False
        return True

    def differences(self, other: LoggedFeedback) -> list[str]:
        """The names of the fields that differ (for a test's message)."""
        return [field.name for field in fields(self) if not self.equals(other, _all_but(field.name))]


def _all_but(name: str) -> tuple[str, ...]:
    return tuple(field.name for field in fields(LoggedFeedback) if field.name != name)
