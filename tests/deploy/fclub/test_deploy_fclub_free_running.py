"""FCLUB's free-running schedule (deploy/fclub/party.py): the local servers and the global server no longer wait for
each other, the users keep rounds in flight, and messages that cross a phase start follow the documented rules.
With a phase start every round (the synchronous FCLUB preset) every round is a barrier and the crossing rules
alone must reproduce the in-memory run; with the faithful CDP-FCLUB-DC every download sent is received and
counted, and regret stays near lock-step's (benchmarks/fclub_free_running.py compares them over seeds)."""

from __future__ import annotations

import numpy as np
import pytest
from fclub_deployment import certs, local0_in_memory, local_copy
from typer.testing import CliRunner

from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import DeploymentError, load_deployment
from privbandits.deploy.fclub.party import outcome, run_in_memory

FREE = {"seed = 0 ": 'seed = 0\nschedule = "free-running"\n#'}


def run(path) -> dict:
    result = CliRunner().invoke(standalone, ["deploy", "local", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    return outcome(load_deployment(path))


def test_with_a_phase_start_every_round_free_running_equals_the_in_memory_run(tmp_path):
    path = local_copy(tmp_path, servers=2, **FREE, **{'variant = "cdp-fclub-dc"': 'variant = "fclub"',
                                                      'preset = "paper"': 'preset = "reference"',
                                                      "horizon = 4095": "horizon = 63"})  # fmt: skip
    certs(path)
    got = run(path)
    reference = run_in_memory(load_deployment(path))
    assert np.array_equal(got["regret"], reference.regret)
    assert got["counts"].uploads == reference.bandit.communication.uploads == 63


def test_free_running_faithful_session_counts_every_message_that_crossed(tmp_path):
    horizon = 255  # three local servers: about 120 downloads cross a phase start
    path = local_copy(tmp_path, servers=3, **FREE, **{"horizon = 4095": f"horizon = {horizon}"})
    certs(path)
    got = run(path)
    spec, results = load_deployment(path), got["results"]
    reference = run_in_memory(spec)
    locals_ = [results[name] for name in spec.names("local_server")]
    assert results["users"]["served"] == horizon and results["global"]["lost"] == {}
    # every download the global server sent reached its local server and was applied or dropped by the rules
    sent = sum(sum(counts) for counts in results["global"]["downloads_per_upload"].values())
    assert sum(local["counts"]["downloads"] for local in locals_) == sent == got["counts"].downloads
    # ... in one message per local server each time (Downloads), each download's bytes as a Download's
    arms, dim = spec.protocol.n_arms, spec.protocol.dim
    downloads = [row for row in results["global"]["traffic"] if row[0] == "async" and row[1] == "global"]
    assert sum(row[4] for row in downloads) == sent * (8 + 8 * dim * dim + 8 * dim + 8)
    assert len(locals_) <= sum(row[3] for row in downloads) <= sent  # fewer once local clusters share global ones
    crossings = {key: sum(local["crossings"][key] for local in locals_) for key in locals_[0]["crossings"]}
    assert set(crossings) == {"stale_downloads", "crossed_downloads", "late_downloads"}
    assert set(results["global"]["crossings"]) == {"crossed_uploads"}
    assert sum(crossings.values()) > 0  # downloads did cross phase starts at this size
    # each reward goes to its local server once, with the server's next round or alone before a phase start or the end
    to_servers = [row for row in results["users"]["traffic"] if row[0] == "users" and row[2].startswith("local")]
    messages, size = sum(row[3] for row in to_servers), sum(row[4] for row in to_servers)
    assert size == horizon * (8 + 8 + 8 * arms * dim) + horizon * 8  # every round's t, user, contexts and reward
    assert horizon < messages <= horizon + len(locals_) * (len(reference.bandit.phase_starts) + 1)
    # the same public clock, and a regret near lock-step's (one seed; the benchmark compares over seeds)
    for local in locals_:
        assert [t for t, *_ in local["phases"]] == reference.bandit.phase_starts
    assert abs(got["regret"][-1] - reference.regret[-1]) < 0.25 * reference.regret[-1]


def test_a_bad_schedule_names_the_field(tmp_path):
    path = local_copy(tmp_path, **{"seed = 0 ": 'seed = 0\nschedule = "async"\n#'})
    with pytest.raises(DeploymentError, match=r"protocol\.schedule: Input should be 'lock-step' or 'free-running'"):
        load_deployment(path)


def test_a_free_running_local_server_learns_each_reward_before_its_next_round(tmp_path):
    from privbandits.deploy.fclub.local_server import _free_step, _LocalEvents
    from privbandits.deploy.fclub.messages import USERS, Arrival, Choice, Feedback, RewardAndArrival

    spec, network, users, server, index = local0_in_memory(tmp_path, **FREE)
    events, contexts = _LocalEvents(), np.ones((10, 10)) / 10
    with network.phase(USERS):
        users.send("local0", Arrival(1, 0, contexts))
        users.send("local0", RewardAndArrival(0.5, 2, 3, contexts))
        users.send("local0", Feedback(0.25))
    owed = _free_step(server, "users", Arrival.kind, None, index, events, network, spec.protocol, False)
    assert (owed.t, owed.user, events.counts["served"]) == (1, 0, 0)  # round 1 served, its reward owed
    owed = _free_step(server, "users", RewardAndArrival.kind, owed, index, events, network, spec.protocol, False)
    assert (owed.t, owed.user, events.counts["served"]) == (2, 3, 1)  # round 1 learnt, then round 2 served
    assert _free_step(server, "users", Feedback.kind, owed, index, events, network, spec.protocol, False) is None
    assert events.counts["served"] == 2
    with network.phase(USERS):
        arms = [users.receive(Choice, "local0").arm for _ in range(2)]  # one per round, nothing else
    assert all(0 <= arm < 10 for arm in arms) and network.pending("local0") == network.pending("users") == []


@pytest.mark.parametrize(
    ("first", "error"),
    [
        ("feedback", "'users' sent 'local0' a reward, but it owes no round one"),
        ("arrival", "'users' sent round 2 to 'local0' before the reward of round 1"),
    ],
)
def test_a_free_running_local_server_refuses_rewards_out_of_turn(tmp_path, first, error):
    """A users party that sends a reward no round is owed, or a round before the reward owed (a broken or hostile
    one), in memory."""
    from privbandits.comm import ProtocolError
    from privbandits.deploy.fclub.local_server import _free_step, _LocalEvents
    from privbandits.deploy.fclub.messages import USERS, Arrival, Feedback

    spec, network, users, server, index = local0_in_memory(tmp_path, **FREE)
    events, contexts = _LocalEvents(), np.ones((10, 10)) / 10
    with network.phase(USERS):
        users.send("local0", Arrival(1, 0, contexts) if first == "arrival" else Feedback(1.0))
    owed = None
    if first == "arrival":
        owed = _free_step(server, "users", Arrival.kind, None, index, events, network, spec.protocol, False)
        with network.phase(USERS):
            users.send("local0", Arrival(2, 0, contexts))
    kind = Arrival.kind if first == "arrival" else Feedback.kind
    with pytest.raises(ProtocolError, match=error):
        _free_step(server, "users", kind, owed, index, events, network, spec.protocol, False)


def test_downloads_carry_each_download_as_it_is_and_a_malformed_one_is_refused():
    from privbandits.comm import ProtocolError
    from privbandits.comm.codec import Envelope, decode, encode
    from privbandits.deploy.fclub.messages import Downloads
    from privbandits.protocols.fclub.messages import Download

    rng = np.random.default_rng(0)
    sent = [Download(c, rng.normal(size=(3, 3)), rng.normal(size=3), n) for c, n in [(2, 5), (0, 1), (7, 0)]]
    message = Downloads.of(sent)
    assert message.payload_bytes() == sum(d.payload_bytes() for d in sent)
    got = decode(encode(Envelope("global", "local0", "async", message))).message.entries(3)
    for a, b in zip(got, sent, strict=True):
        assert (a.cluster, a.count) == (b.cluster, b.count)
        assert np.array_equal(a.gram, b.gram) and np.array_equal(a.moment, b.moment)
    bad = [Downloads(message.clusters, message.grams[:, :2], message.moments, message.counts),
           Downloads(message.clusters, message.grams, np.full((3, 3), np.nan), message.counts),
           Downloads(message.clusters.astype(np.float64), message.grams, message.moments, message.counts)]  # fmt: skip
    errors = [r"grams is float64 of shape \(3, 2, 3\); expected finite float64 of shape \(3, 3, 3\) \(3 downloads, "
              r"d = 3\)",
              r"moments is float64 of shape \(3, 3\); expected finite float64 of shape \(3, 3\)",
              r"clusters is float64 of shape \(3,\); expected finite int64 of shape \(3,\)"]  # fmt: skip
    for message, error in zip(bad, errors, strict=True):
        with pytest.raises(ProtocolError, match=error):
            message.entries(3)
