"""Contract: a refused call leaves the protocol as it was, and it then plays exactly as a twin that never saw the call
(issue 14, issue 30 item 7), over every protocol's parties and the learners they run: vertical O3M (plain and secure
aggregation), FCLUB's variants and local baselines, the MPC ε-greedy learner and its plaintext twin, and P2B's devices.

Each protocol's refused calls are listed in one place below (:data:`REFUSALS`), with the exact message each gets; its
:class:`Subject` says how it is made ready for the call (warmed up, a round selected, ...), what a refusal must leave
unchanged (a digest of its whole state, and its traffic) and how it goes on beside its twin. What each protocol refuses
beyond calls on a party (constructors, configs, messages) is in its folder's ``test_bad_input_<p>.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import fclub_rounds as fclub
import mpc_rounds as mpc
import numpy as np
import pytest
import vertical_rounds as vertical
from bad_input import INF, NAN, digest

from privbandits.linear import LinTS
from privbandits.protocols.p2b.core import choose_reports
from privbandits.validation import CallOrderError, InvalidInputError

pytestmark = pytest.mark.filterwarnings("ignore:FCLUB. privatizer noise exceeded")


@dataclass(frozen=True)
class Subject:
    """A party (or learner) ready for a call: ``make`` builds it (twice: the party and its twin), ``state`` is what a
    refused call must leave unchanged, ``go_on(party, twin)`` plays both on and asserts they agree."""

    make: Callable[[], Any]
    state: Callable[[Any], object]
    go_on: Callable[[Any, Any], None]


@dataclass(frozen=True)
class Refusal:
    """``call(party)`` is refused with ``error`` and exactly ``message`` (``prefix``: a message that starts with it,
    where the rest repeats a long value)."""

    subject: str
    label: str
    call: Callable[[Any], object]
    message: str
    error: type[Exception] = InvalidInputError
    prefix: bool = False


SUBJECTS: dict[str, Subject] = {}
REFUSALS: list[Refusal] = []


# -- vertical O3M: the protocol object (the active party and the passive parties, in memory) -----------------------
def _vertical_open(secure: bool) -> Any:
    vf = vertical.protocol(secure)
    vertical.play(vf, range(3))
    return vf


def _vertical_selected() -> Any:
    """A Thompson-sampling protocol with round 3 selected (its contexts kept on it), waiting for the reward."""
    vf = vertical.protocol(learner=LinTS(vertical.K, vertical.D, rng=4))
    vertical.play(vf, range(2))
    vf.selected_contexts = vertical.contexts(2)
    vf.selected_arm = vf.select(vf.selected_contexts)
    return vf


def _vertical_state(vf) -> tuple:
    """Everything but the wall-clock counters, and the messages sent (none, for a refused call)."""
    return vertical.state(vf), vf.traffic.rows()


def _vertical_go_on(vf, twin) -> None:
    for party in (vf, twin):  # a selected round is still open: its good reward is taken
        if hasattr(party, "selected_arm"):
            party.update(party.selected_contexts, party.selected_arm, 1.0)
    assert vertical.play(vf, range(3, 6)) == vertical.play(twin, range(3, 6))
    np.testing.assert_array_equal(vf.theta, twin.theta)


def _vertical_played() -> Any:
    vf = vertical.protocol()
    c = vertical.contexts(0)
    vf.update(c, vf.select(c), 1.0)
    return vf


for secure in (False, True):
    SUBJECTS[f"vertical, secure={secure}"] = Subject(lambda s=secure: _vertical_open(s), _vertical_state,
                                                      _vertical_go_on)  # fmt: skip
SUBJECTS["vertical, round selected"] = Subject(_vertical_selected, _vertical_state, _vertical_go_on)
SUBJECTS["vertical, fresh"] = Subject(vertical.protocol, _vertical_state, _vertical_go_on)
SUBJECTS["vertical, round played"] = Subject(_vertical_played, _vertical_state, _vertical_go_on)

VERTICAL_SELECTS = [
    ("NaN at a passive party", lambda c: (vertical._nan_in_passive(c),), {},
     "contexts must be finite (no NaN or inf), got nan at index (1, 6)"),
    ("inf", lambda c: (np.where(c > 0, INF, c),), {},
     "contexts must be finite (no NaN or inf), got inf at index (0, 0)"),
    ("a feature short", lambda c: (c[:, :-1],), {}, "contexts have shape (4, 6); expected (4, 7)"),
    ("an item more", lambda c: (np.zeros((vertical.K + 1, vertical.D)),), {},
     "contexts have shape (5, 7); expected (4, 7)"),
    ("present too short", lambda c: (c,), {"present": [True, False]},
     "present must be a sequence of 3 bools (one per party), got [True, False]"),
    ("present of integers", lambda c: (c,), {"present": [True, 1, 0]},
     "present must be a sequence of 3 bools (one per party), got [True, 1, 0]"),
    ("the active party absent", lambda c: (c,), {"present": [False, True, True]},
     "the active party always knows the user it serves (present[0] must be True)"),
    ("present a bool", lambda c: (c,), {"present": True}, "present must be a sequence of 3 bools, got True"),
    ("a negative user", lambda c: (c,), {"user": -1}, "user must be >= 0, got -1"),
    ("a float user", lambda c: (c,), {"user": 1.5}, "user must be an integer >= 0, got 1.5"),
]  # fmt: skip
for secure in (False, True):
    for label, args, kwargs, message in VERTICAL_SELECTS:
        call = lambda vf, args=args, kwargs=kwargs: vf.select(*args(vertical.contexts(3)), **kwargs)  # noqa: E731
        REFUSALS.append(Refusal(f"vertical, secure={secure}", f"select: {label}", call, message))

VERTICAL_UPDATES = [
    ("arm -1", lambda c: (c, -1, 1.0), "arm must be an integer in [0, n_arms) = [0, 4), got -1"),
    ("arm K", lambda c: (c, vertical.K, 1.0), "arm must be an integer in [0, n_arms) = [0, 4), got 4"),
    ("a float arm", lambda c: (c, 0.0, 1.0), "arm must be an integer in [0, n_arms) = [0, 4), got 0.0"),
    ("a NaN reward", lambda c: (c, 0, NAN), "reward must be a finite real number, got nan"),
    ("an inf reward", lambda c: (c, 0, INF), "reward must be a finite real number, got inf"),
    ("a string reward", lambda c: (c, 0, "1"), "reward must be a finite real number, got '1'"),
    ("a feature short", lambda c: (c[:, :-1], 0, 1.0), "contexts have shape (4, 6); expected (4, 7)"),
    ("other contexts", lambda c: (c + 1.0, 0, 1.0),
     "contexts must be the ones this round was selected on (select(contexts))"),
]  # fmt: skip
for label, bad, message in VERTICAL_UPDATES:
    call = lambda vf, bad=bad: vf.update(*bad(vf.selected_contexts))  # noqa: E731
    REFUSALS.append(Refusal("vertical, round selected", f"update: {label}", call, message))
REFUSALS += [
    Refusal("vertical, fresh", "update before select", lambda vf: vf.update(vertical.contexts(0), 0, 1.0),
            "update needs a select first: one update per selected round", CallOrderError),
    Refusal("vertical, round played", "a second update",
            lambda vf: vf.update(vertical.contexts(0), 0, 1.0),
            "update needs a select first: one update per selected round", CallOrderError),
    Refusal("vertical, round played", "the active party learns before choosing", lambda vf: vf.active.learn(0, 1.0),
            "the active party learns only after choosing an arm for a round (choose() first)", CallOrderError),
]  # fmt: skip
for secure in (False, True):
    REFUSALS.append(Refusal(f"vertical, secure={secure}", "the active party learns before choosing",
                            lambda vf: vf.active.learn(0, 1.0),
                            "the active party learns only after choosing an arm for a round (choose() first)",
                            CallOrderError))  # fmt: skip


# -- FCLUB: the federated bandit (local servers, the global server) and the local baselines ----------------------
def _fclub_open(kind: str, warm: int) -> Any:
    bandit = fclub.BANDITS[kind]()
    bandit.rng_of_test = fclub._warm(bandit, warm)
    return bandit


def _fclub_selected(kind: str) -> Any:
    bandit = fclub.BANDITS[kind]()
    rng = fclub._warm(bandit)
    bandit.selected = fclub._round(rng)
    bandit.select(*bandit.selected)
    bandit.rng_of_test = rng
    return bandit


def _fclub_fresh(kind: str) -> Any:
    bandit = fclub.BANDITS[kind]()
    bandit.rng_of_test = np.random.default_rng(3)
    return bandit


def _fclub_state(bandit) -> str:
    extra = {key: bandit.__dict__.pop(key) for key in ("rng_of_test", "selected") if key in bandit.__dict__}
    try:
        return digest(bandit)
    finally:
        bandit.__dict__.update(extra)


def _fclub_go_on(bandit, twin) -> None:
    assert bandit.t == twin.t
    for party in (bandit, twin):
        if "selected" in party.__dict__:  # the round is still open: its good reward is taken
            party.update(0.5)
    rngs = bandit.__dict__.pop("rng_of_test"), twin.__dict__.pop("rng_of_test")
    bandit.__dict__.pop("selected", None), twin.__dict__.pop("selected", None)
    fclub._same_play(bandit, twin, rngs[0])


FCLUB_SELECTS = [
    ("user -1", -1, None, "user must be an integer in [0, n_users) = [0, 6), got -1"),
    ("user n", fclub.N_USERS, None, "user must be an integer in [0, n_users) = [0, 6), got 6"),
    ("a float user", 1.0, None, "user must be an integer in [0, n_users) = [0, 6), got 1.0"),
    ("a bool user", True, None, "user must be an integer in [0, n_users) = [0, 6), got True"),
    ("a string user", "0", None, "user must be an integer in [0, n_users) = [0, 6), got '0'"),
    ("no user", None, None, "user must be an integer in [0, n_users) = [0, 6), got None"),
    ("NaN", 0, fclub._with(NAN), "contexts must be finite (no NaN or inf), got nan at index (1, 2)"),
    ("-inf", 0, fclub._with(-INF, (3, 0)), "contexts must be finite (no NaN or inf), got -inf at index (3, 0)"),
    ("too large", 0, fclub._with(1e200, (2, 1)),
     "contexts are too large: a row's squared norm overflows float64 (max |x_i| = 1e+200)"),
    ("a feature more", 0, lambda c: np.ones((fclub.K, fclub.D + 1)),
     "contexts have shape (4, 4); expected (n_arms, dim) = (4, 3)"),
    ("an arm more", 0, lambda c: np.ones((fclub.K + 1, fclub.D)),
     "contexts have shape (5, 3); expected (n_arms, dim) = (4, 3)"),
    ("one row", 0, lambda c: c[0], "contexts have shape (3,); expected (n_arms, dim) = (4, 3)"),
    ("a list", 0, lambda c: c.tolist(), "contexts must be a float array of shape (n_arms, dim) = (4, 3), got [["),
    ("strings", 0, lambda c: np.full((fclub.K, fclub.D), "a"), "contexts must be a real-valued array, got dtype <U1"),
    ("none", 0, lambda c: None, "contexts must be a float array of shape (n_arms, dim) = (4, 3), got None"),
]  # fmt: skip
FCLUB_REWARDS = [NAN, INF, -INF, "1", True, None, [1.0]]
UPDATE_FIRST = "update(reward) needs a select(user, contexts) first: one update per selected round"

for kind in fclub.BANDITS:
    # round 21 tests finiteness through the scores; round 31 = 2^5 - 1 starts a phase, whose cluster detection runs
    # before scoring, so the contexts are tested first (see RoundChecks)
    for warm, when in ((20, "scored"), (30, "detection")):
        name = f"fclub {kind}, {when}"
        SUBJECTS[name] = Subject(lambda k=kind, w=warm: _fclub_open(k, w), _fclub_state, _fclub_go_on)
        for label, user, bad, message in FCLUB_SELECTS:
            contexts = fclub._round(np.random.default_rng(0))[1]
            contexts = contexts if bad is None else bad(contexts)
            call = lambda b, u=user, c=contexts: b.select(u, c)  # noqa: E731
            REFUSALS.append(Refusal(name, f"select: {label}", call, message, prefix=label == "a list"))
    SUBJECTS[f"fclub {kind}, round selected"] = Subject(lambda k=kind: _fclub_selected(k), _fclub_state, _fclub_go_on)
    for reward in FCLUB_REWARDS:
        message = f"reward must be a finite real number, got {reward!r}"
        REFUSALS.append(Refusal(f"fclub {kind}, round selected", f"update: {reward!r}", lambda b, r=reward: b.update(r),
                                message))  # fmt: skip
    SUBJECTS[f"fclub {kind}, fresh"] = Subject(lambda k=kind: _fclub_fresh(k), _fclub_state, _fclub_go_on)
    SUBJECTS[f"fclub {kind}, warmed"] = SUBJECTS[f"fclub {kind}, scored"]
    REFUSALS += [
        Refusal(f"fclub {kind}, fresh", "update before select", lambda b: b.update(1.0), UPDATE_FIRST, CallOrderError),
        Refusal(f"fclub {kind}, warmed", "a second update", lambda b: b.update(1.0), UPDATE_FIRST, CallOrderError),
    ]


# -- the MPC ε-greedy learner (the computing parties, the dealer, the puller and rewarder) and its twin -------------
def _mpc_warmed(kind: str) -> Any:
    learner = mpc.LEARNERS[kind]()
    learner.rng_of_test = mpc._warm(learner)
    return learner


def _mpc_state(learner) -> str:
    rng = learner.__dict__.pop("rng_of_test")
    try:
        return digest(learner)
    finally:
        learner.rng_of_test = rng


def _mpc_go_on(learner, twin) -> None:
    before = _mpc_state(learner)
    good = mpc._unit(learner.__dict__.pop("rng_of_test"))
    twin.__dict__.pop("rng_of_test")
    assert learner.step(good, lambda arm: 1) == twin.step(good, lambda arm: 1)
    assert digest(learner) != before
    np.testing.assert_array_equal(learner.checkpoint()[1], twin.checkpoint()[1])


def _never(arm: int) -> float:
    raise AssertionError(f"the environment was asked for arm {arm}'s reward: the context was not refused first")


NORM = "context must have L2 norm <= 1 (up to rounding: 1.00003052; normalise it, e.g. x / max(1, |x|)), got norm "
MPC_CONTEXTS = [
    ("norm 15", np.ones(mpc.D) * 7.5, NORM + "15"),
    ("norm 1.5", np.ones(mpc.D) * 1.5 / 2, NORM + "1.5"),
    ("just past the norm", np.array([1.0, 0.0, 0.0, 1e-2]), NORM + "1.00005"),
    ("an infinite norm", np.full(mpc.D, 1e200), NORM + "inf"),
    ("NaN", np.array([NAN, 0.0, 0.0, 0.0]), "context must be finite (no NaN or inf), got nan at index 0"),
    ("-inf", np.array([0.0, 0.0, -INF, 0.0]), "context must be finite (no NaN or inf), got -inf at index 2"),
    ("a feature more", np.ones(mpc.D + 1) / 4, "context must have shape (4,), got (5,)"),
    ("a feature short", np.ones(mpc.D - 1) / 4, "context must have shape (4,), got (3,)"),
    ("a matrix", np.ones((1, mpc.D)) / 4, "context must have shape (4,), got (1, 4)"),
    ("strings", ["a"] * mpc.D, "context must be a real array of shape (4,), got ['a', 'a', 'a', 'a']"),
    ("none", None, "context must have shape (4,), got ()"),
]
for kind in mpc.LEARNERS:
    SUBJECTS[f"mpc {kind}"] = Subject(lambda k=kind: _mpc_warmed(k), _mpc_state, _mpc_go_on)
    for label, x, message in MPC_CONTEXTS:
        REFUSALS.append(Refusal(f"mpc {kind}", f"step: {label}", lambda learner, x=x: learner.step(x, _never), message))


# -- P2B: a device host's report choice (its coins come from its generator) ----------------------------------------
REWARDS = (np.arange(12).reshape(6, 2) % 2).astype(float)


def _p2b_go_on(rng, twin) -> None:
    users, rows = choose_reports(REWARDS, 0.5, 0.1, rng)
    twin_users, twin_rows = choose_reports(REWARDS, 0.5, 0.1, twin)
    np.testing.assert_array_equal(users, twin_users)
    np.testing.assert_array_equal(rows, twin_rows)


SUBJECTS["p2b device coins"] = Subject(lambda: np.random.default_rng(4), digest, _p2b_go_on)
REFUSALS += [
    Refusal("p2b device coins", f"choose_reports: {label}", lambda rng, args=args: choose_reports(*args, rng), message,
            error)
    for label, args, message, error in [
        ("NaN participation", (REWARDS, NAN, 0.1), "participation must be a finite real number in [0, 1], got nan",
         InvalidInputError),
        ("participation past 1", (REWARDS, 1.5, 0.1), "participation must be in [0, 1], got 1.5", InvalidInputError),
        ("a negative rate below 0", (REWARDS, 0.5, -0.1), "negative_rate must be in [0, 1], got -0.1",
         InvalidInputError),
        ("a negative rate past 1", (REWARDS, 0.5, 1.5), "negative_rate must be in [0, 1], got 1.5", InvalidInputError),
        ("one user's rewards", (REWARDS[0], 0.5, 0.1), "rewards must be a (users, interactions) array, got shape (2,)",
         ValueError),
    ]
]  # fmt: skip


@pytest.mark.parametrize("refusal", REFUSALS, ids=[f"{r.subject}: {r.label}" for r in REFUSALS])
def test_a_refused_call_leaves_the_party_as_it_was_and_it_goes_on_as_its_twin(refusal):
    subject = SUBJECTS[refusal.subject]
    party, twin = subject.make(), subject.make()
    before = subject.state(party)
    with pytest.raises(refusal.error) as caught:
        refusal.call(party)
    message = str(caught.value)
    assert message.startswith(refusal.message) if refusal.prefix else message == refusal.message
    assert subject.state(party) == before
    subject.go_on(party, twin)


def test_every_subject_is_called_and_each_protocol_has_refusals():
    assert {refusal.subject for refusal in REFUSALS} == set(SUBJECTS)
    protocols = {name.split()[0].rstrip(",") for name in SUBJECTS}
    assert protocols == {"vertical", "fclub", "mpc", "p2b"}


def test_the_state_check_sees_a_call_that_changes_the_party():
    """Not vacuous: a call that is taken changes each subject's state."""
    for name, taken in [
        ("vertical, secure=True", lambda vf: vertical.play(vf, range(3, 4))),
        ("fclub cdp-fclub-dc, scored", lambda b: fclub._warm(b, 1)),
        ("mpc private", lambda learner: learner.step(np.full(mpc.D, 0.25), lambda arm: 1)),
        ("p2b device coins", lambda rng: choose_reports(REWARDS, 0.5, 0.1, rng)),
    ]:
        subject = SUBJECTS[name]
        party = subject.make()
        before = subject.state(party)
        taken(party)
        assert subject.state(party) != before, name
