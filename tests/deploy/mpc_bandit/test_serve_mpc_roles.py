"""The MPC deployment's serving roles in one process (each behind its own service and store, linked by mutual TLS on
127.0.0.1, no HTTP): the default suite's quick versions of tests/deploy/mpc_bandit/test_serve_mpc.py (which runs
them as ``privbandits serve`` processes)."""

from __future__ import annotations

import numpy as np
import pytest
from mpc_serving import in_process, make_served_deployment, synthetic, until_linked

from privbandits.comm import ProtocolError
from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.mpc_bandit.party import run_in_memory
from privbandits.deploy.mpc_bandit.served import serving_role
from privbandits.deploy.mpc_bandit.serving import check_flag, check_round, held_rounds
from privbandits.serve.decider import DecideInput
from privbandits.serve.export import decision_log
from privbandits.serve.role import FeaturePut, Refused
from privbandits.serve.service import DecisionService
from privbandits.validation import InvalidInputError


def _decided(spec, services, blocks, t: int) -> tuple[str, int]:
    """Event t: every computing party's block put, then the environment's decision (asked again while the parties
    link); its id and arm."""
    event = f"event-{t}"
    for name in spec.names("computing"):
        services[name].put(FeaturePut(event, blocks[name][t][None, :]))
    return event, until_linked(services["env"].decide, DecideInput(event, "u", np.zeros((1, 1)))).arm


def test_served_roles_replaying_the_data_file_decide_as_deploy_local(tmp_path):
    path = make_served_deployment(tmp_path, rounds=4)
    spec = load_deployment(path)
    blocks, rewards = synthetic(spec)
    arms = []
    with in_process(path) as services:
        for t in range(spec.protocol.rounds):
            event, arm = _decided(spec, services, blocks, t)
            arms.append(arm)
            assert not services["env"].reward(event, float(rewards[t, arm])).duplicate
        ledger = services["env"].ledger()
        with pytest.raises(InvalidInputError, match=r"have no propensities \(the party's policy explores, but the "):
            decision_log(services["env"].store, propensities_known=services["env"].decider.propensities_known)
    assert arms == run_in_memory(spec)[0].arms.tolist()
    assert ledger["learner"]["rounds_closed"] == 4 and ledger["events"]["rewarded"] == 4
    # every computing party's state is durable at round 4 (and the round before)
    assert all(sorted(held_rounds(spec, name)) == [3, 4] for name in spec.names("computing"))


def test_a_missing_block_is_refused_naming_the_party_and_nothing_changes(tmp_path):
    path = make_served_deployment(tmp_path, rounds=2, deadline_s=1.0)
    spec = load_deployment(path)
    blocks, rewards = synthetic(spec)
    with in_process(path) as services:
        env, c0, c1 = services["env"], services["c0"], services["c1"]
        c0.put(FeaturePut("first", blocks["c0"][0][None, :]))
        with pytest.raises(Refused) as refused:
            until_linked(env.decide, DecideInput("first", "u", np.zeros((1, 1))))
        assert refused.value.status == 503 and refused.value.field == "event_id"
        assert "'c1' has no block of event 'first'" in refused.value.message
        assert env.ledger()["learner"]["openings"] == 0 and env.store.counts()["open"] == 0
        with pytest.raises(Refused) as twice:  # one event, one block
            c0.put(FeaturePut("first", blocks["c0"][1][None, :]))
        assert twice.value.status == 409 and twice.value.field == "key"
        with pytest.raises(Refused) as wide:
            c1.put(FeaturePut("first", np.zeros((1, 5))))
        assert wide.value.field == "features" and "1 row of 2 numbers" in wide.value.message
        with pytest.raises(Refused) as own:  # the environment holds no block
            env.decide(DecideInput("first", "u", np.ones((1, 3))))
        assert own.value.field == "features"
        c1.put(FeaturePut("first", blocks["c1"][0][None, :]))
        first = until_linked(env.decide, DecideInput("first", "u", np.zeros((1, 1))))
        c0.put(FeaturePut("second", blocks["c0"][1][None, :]))
        c1.put(FeaturePut("second", blocks["c1"][1][None, :]))
        with pytest.raises(Refused) as busy:  # one event at a time
            env.decide(DecideInput("second", "u", np.zeros((1, 1))))
        assert busy.value.status == 409 and "'first' is still open" in busy.value.message
        env.reward("first", float(rewards[0, first.arm]))
        second = env.decide(DecideInput("second", "u", np.zeros((1, 1))))
    assert [first.arm, second.arm] == run_in_memory(spec)[0].arms.tolist()


def _crash(service) -> None:
    """What SIGKILL leaves of a party: its links cut without a word, its store as committed, no last checkpoint."""
    role = service.decider
    role.stopping.set()
    if role._network is not None:
        role._network.close_sockets()
    service._worker.shutdown()
    service.store.close()


@pytest.mark.parametrize("victim", ["c1", pytest.param("env", marks=pytest.mark.slow)])
def test_a_party_crashed_while_an_event_is_open_comes_back_and_absorbs_its_reward_once(tmp_path, victim):
    path = make_served_deployment(tmp_path, rounds=4, deadline_s=3.0)
    spec = load_deployment(path)
    blocks, rewards = synthetic(spec)
    arms = []
    with in_process(path) as services:
        for t in range(spec.protocol.rounds):
            event, arm = _decided(spec, services, blocks, t)
            arms.append(arm)
            if t == 1:
                _crash(services.pop(victim))
                store = spec.output / f"{victim}.serve.sqlite"
                services[victim] = DecisionService.open(serving_role(spec, victim), store)
            assert not services["env"].reward(event, float(rewards[t, arm])).duplicate
            assert services["env"].reward(event, float(rewards[t, arm])).duplicate
        ledgers = {name: services[name].ledger() for name in ("env", "c0")}
        closed = services["c1"].decider.rounds
    assert arms == run_in_memory(spec)[0].arms.tolist()
    assert ledgers["env"]["learner"]["rounds_closed"] == 4 and ledgers["env"]["events"]["rewarded"] == 4
    assert ledgers["c0"]["learner"]["rounds_closed"] == 4 and closed == 4
    assert ledgers["c0"]["learner"]["sessions"] >= 2


def _reference_with_voided(spec, voided: int) -> list[int]:
    """The in-memory run (as run_in_memory) in which round ``voided``'s update is dropped: what an expired event does
    (its round played with r = 0, every party's randomness in step, the learner told nothing)."""
    from privbandits.deploy.mpc_bandit.party import config_of, private_seeds
    from privbandits.protocols.mpc_bandit import PrivateEpsilonGreedy

    learner = PrivateEpsilonGreedy(config_of(spec), seeds=private_seeds(spec), parties=spec.names("computing"))
    blocks, rewards = synthetic(spec)
    contexts = np.concatenate([blocks[name] for name in spec.names("computing")], axis=1)
    arms = []
    for t in range(spec.protocol.rounds):
        before = learner.inverse, learner.b
        arms.append(learner.step(contexts[t], (lambda arm: 0.0) if t == voided else rewards[t].__getitem__))
        if t == voided:
            learner.inverse, learner.b = before
    return arms


def test_an_event_without_a_reward_expires_and_the_learner_is_told_nothing(tmp_path):
    path = make_served_deployment(tmp_path, rounds=4)
    spec = load_deployment(path)
    blocks, rewards = synthetic(spec)
    now = [1_000_000.0]
    arms = []
    with in_process(path, reward_timeout_s=60.0, clock=lambda: now[0]) as services:
        env = services["env"]
        for t in range(spec.protocol.rounds):
            event = f"event-{t}"
            for name in spec.names("computing"):
                services[name].put(FeaturePut(event, blocks[name][t][None, :]))
            decided = until_linked(env.decide, DecideInput(event, "u", np.zeros((1, 1))))
            arms.append(decided.arm)
            if t == 1:  # no reward comes: the event closes at its timeout
                now[0] += 61.0
                assert env.expire_due() == 1
                with pytest.raises(Refused) as late:
                    env.reward(event, 1.0)
                assert late.value.status == 409
            else:
                env.reward(event, float(rewards[t, decided.arm]))
        ledger = env.ledger()
        computing = services["c0"].decider.rounds
    assert ledger["events"] == {"open": 0, "rewarded": 3, "expired": 1}
    assert ledger["learner"]["rounds_closed"] == 4 and ledger["learner"]["rounds_expired"] == 1 and computing == 4
    assert arms == _reference_with_voided(spec, 1)


@pytest.mark.parametrize("value", [-1, 10**10, 2.0, "3", True, None])
def test_a_round_a_peer_sends_must_be_a_round_number(value):
    with pytest.raises(ProtocolError, match="'env' sent a start with round"):
        check_round(value, "a start", "env")


def test_a_round_a_peer_sends_must_be_the_expected_one_and_a_flag_a_boolean():
    assert check_round(np.int64(3), "a close", "env", 3) == 3
    with pytest.raises(ProtocolError, match="for round 4, expected round 3"):
        check_round(4, "a close", "env", 3)
    assert check_flag(np.bool_(True), "a go", "env") is True
    with pytest.raises(ProtocolError, match="not true or false"):
        check_flag(1, "a go", "env")


def test_the_delayed_replay_with_no_delay_decides_as_deploy_local_and_a_delay_is_refused(tmp_path):
    """:func:`privbandits.serve.replay.replay` over the served roles (what benchmarks/delayed_feedback.py runs): with
    every reward right after its decision, the arms of the in-memory run, each reward absorbed once; with a reward
    owed, the next decide is refused (409: one event open at a time) and nothing more is decided."""
    from mpc_serving import replayer

    from privbandits.serve.replay import replay

    (tmp_path / "now").mkdir()
    (tmp_path / "late").mkdir()
    path = make_served_deployment(tmp_path / "now", rounds=4)
    spec = load_deployment(path)
    expected = synthetic(spec)[1]
    with in_process(path) as services:
        arms = replay(replayer(spec, services), expected, 0).arms
        ledger = services["env"].ledger()
    assert arms.tolist() == run_in_memory(spec)[0].arms.tolist()
    assert ledger["learner"]["rounds_closed"] == 4 and ledger["events"] == {"open": 0, "rewarded": 4, "expired": 0}
    later = make_served_deployment(tmp_path / "late", rounds=4)
    with in_process(later) as services:
        with pytest.raises(Refused) as refused:
            replay(replayer(load_deployment(later), services), expected, 1)
        assert services["env"].ledger()["learner"]["openings"] == 1
    assert refused.value.status == 409 and "'e0' is still open" in refused.value.message
