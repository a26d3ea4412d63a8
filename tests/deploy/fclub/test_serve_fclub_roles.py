"""The served FCLUB roles in one process (real mutual-TLS links on 127.0.0.1, direct calls instead of HTTP): each
variant's decisions equal the in-memory run's; a local server's checkpoint restores it exactly; what a local server
refuses, naming the field; the users party is not served."""

from __future__ import annotations

import io

import numpy as np
import pytest
from cli_runner import separate
from fclub_serving import InProcess, arrivals, in_memory_arms, served_copy

from privbandits.deploy.deployment import DeploymentError
from privbandits.deploy.fclub.served import serving_role
from privbandits.serve.decider import DecideInput, Refused


@pytest.mark.parametrize(
    ("variant", "preset", "horizon", "options"),
    [
        ("cdp-fclub-dc", "paper", 31, ""),  # every upload privatized
        ("cdp-fclub-dc", "reference", 31, ""),  # shared statistics, noise only in the trigger
        ("fclub", "reference", 15, ""),  # synchronous: detection (a barrier) every round
        ("cdp-fclub-dc", "paper", 31, "options = { rebuild_local_copies = true }"),  # download checks as ticks
    ],
)
def test_every_variant_served_decides_as_the_in_memory_run(tmp_path, variant, preset, horizon, options):
    replace = {'variant = "cdp-fclub-dc"': f'variant = "{variant}"',
               'preset = "paper"': f'preset = "{preset}"\n{options}'}  # fmt: skip
    spec = served_copy(tmp_path, servers=2, horizon=horizon, **replace)
    federation = InProcess(spec)
    try:
        assert federation.play(arrivals(spec)) == in_memory_arms(spec)
        assert federation.roles["global"].ledger()["rounds"] == horizon
    finally:
        federation.stop()


@pytest.mark.parametrize("delay", [pytest.param(0, marks=pytest.mark.slow), 6])  # 0: the variants' test's replay
def test_a_replay_with_rewards_k_events_late_absorbs_every_reward_exactly_once(tmp_path, delay):
    """:func:`privbandits.serve.replay.replay` over the roles (what benchmarks/delayed_feedback.py runs), each reward
    ``delay`` events of the federation late: every local server absorbs each of its users' rewards once (its count is
    its events'), the global clock counts every one once; with no delay, the in-memory run's arms."""
    from fclub_serving import owner_of

    from privbandits.serve.replay import replay

    horizon = 23
    spec = served_copy(tmp_path, servers=2, horizon=horizon)
    rounds = arrivals(spec)
    federation = InProcess(spec)
    try:
        arms = replay(federation.replayer(rounds), np.zeros((horizon, spec.protocol.n_arms)), delay).arms
        ledgers = {name: role.ledger() for name, role in federation.roles.items()}
    finally:
        federation.stop()
    owners = owner_of(spec)
    for name in spec.names("local_server"):
        assert ledgers[name]["rewards_absorbed"] == sum(owners[user] == name for user, _, _ in rounds)
    assert ledgers["global"]["rounds"] == horizon
    assert delay or arms.tolist() == in_memory_arms(spec)


def contents(checkpoint: bytes) -> dict[str, bytes]:
    """A checkpoint's arrays (and its JSON tree), as bytes: the archive's own bytes carry the time it was written."""
    with np.load(io.BytesIO(checkpoint), allow_pickle=False) as archive:
        return {key: archive[key].tobytes() + str(archive[key].dtype).encode() for key in archive.files}


def test_a_local_servers_checkpoint_restores_it_exactly(tmp_path):
    spec = served_copy(tmp_path, servers=2, horizon=31)
    rounds = arrivals(spec)
    federation = InProcess(spec)
    try:
        federation.play(rounds[:20])
        local0 = federation.roles["local0"]
        saved = local0.checkpoint()
        fresh = serving_role(spec, "local0")
        fresh.restore(saved)
        assert contents(fresh.checkpoint()) == contents(saved) and fresh.model_version == local0.model_version
        user, contexts, _ = next(r for r in rounds[20:] if str(r[0]) in {str(u) for u in local0.users})
        asked = DecideInput("next", str(user), contexts)
        assert fresh.decide(asked).arm == local0.decide(asked).arm
        assert fresh.ledger()["rewards_absorbed"] == local0.ledger()["rewards_absorbed"] > 0
        with pytest.raises(ValueError, match="checkpoint"):
            fresh.restore(b"not a checkpoint")
    finally:
        federation.stop()


def test_a_local_server_refuses_what_it_cannot_take_naming_the_field(tmp_path):
    spec = served_copy(tmp_path, servers=2, horizon=15)
    local0 = serving_role(spec, "local0")  # refusals come before any state is read: no links needed
    contexts = arrivals(spec)[0][1]
    cases = [
        (DecideInput("e", "39", contexts), "user_id", "an integer in [0, 19], got '39'"),
        (DecideInput("e", "alice", contexts), "user_id", "got 'alice'"),
        (DecideInput("e", "0", contexts[:3]), "features", "K = 10 rows"),
        (DecideInput("e", "0", contexts, (3, 10)), "arms[1]", "an arm in [0, 9], got 10"),
        (DecideInput("e", "0", contexts, (3, 3)), "arms", "must not repeat"),
        (DecideInput("e", "0", np.full_like(contexts, 1e300)), "features", "finite squared norm"),
    ]
    for asked, field, words in cases:
        with pytest.raises(Refused) as refused:
            local0.decide(asked)
        assert refused.value.field == field and words in refused.value.message


def test_the_users_party_is_not_served_the_application_takes_its_part(tmp_path):
    spec = served_copy(tmp_path, servers=2, horizon=15)
    with pytest.raises(DeploymentError, match="the users party is not served"):
        serving_role(spec, "users")
    from privbandits.cli import app

    result = separate().invoke(app, ["serve", str(spec.source), "--as", "users"])
    assert result.exit_code == 2
    assert "the application takes its part" in result.stderr and "local0, local1" in result.stderr


def test_what_a_peer_sends_is_checked_against_what_the_protocol_allows():
    from privbandits.comm import ProtocolError
    from privbandits.deploy.fclub.serving import check_statistics
    from privbandits.protocols.fclub.messages import Download, Upload

    check_statistics(Upload(1, np.eye(3), np.zeros(3), 4), "local0", 3, {0, 1})  # as allowed: nothing said
    with pytest.raises(ProtocolError) as refused:
        check_statistics(Upload(7, np.eye(2), np.array([np.nan, 0.0, 0.0]), -1), "local0", 3, {0, 1})
    message = str(refused.value)
    assert "'local0' sent a malformed 'fclub.upload'" in message and "cluster 7 is none of [0, 1]" in message
    assert "gram must be float64 of shape (3, 3), got (2, 2)" in message and "moment must be finite" in message
    assert "count must be an integer >= 0, got -1" in message
    with pytest.raises(ProtocolError, match="'global' sent a malformed 'fclub.download': cluster 2"):
        check_statistics(Download(2, np.eye(3), np.zeros(3), 0), "global", 3, {0})
