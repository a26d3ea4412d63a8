"""FCLUB with five local servers, the global server and the users, each in its own OS process over mutual TLS.

The processes' regret, communication (per round and by kind), the local servers' releases and the
protocol's traffic per link must equal the in-memory run with the same seed; the global server must
receive the very phase uploads and uploads of the in-memory run (which carry no raw statistics with
the privatizer on); a SIGKILLed local server is named by the global server and the others finish.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import time

import numpy as np
import pytest
from fclub_deployment import PROTOCOL_PHASES, assert_equals_in_memory, certs, local0_in_memory, local_copy, uploads_of
from fclub_runs import snooped_run
from typer.testing import CliRunner

from privbandits.comm import InMemoryNetwork
from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import DeploymentError, load_deployment
from privbandits.deploy.fclub.party import outcome, run_in_memory
from privbandits.deploy.fclub.session import config_of, environment_of, upload_digest


def arrivals(spec) -> np.ndarray:
    """The local server of each round's user (the environment the users party draws)."""
    from privbandits.deploy.fclub.session import _server_of_user, _streams, environment_of

    env = environment_of(spec)
    env.reset(_streams(spec)[0])
    servers = _server_of_user(spec)
    return np.array([servers[env.user] for _ in range(spec.protocol.horizon) if env.next_round() is not None])


def test_the_shipped_example_runs_as_processes_and_equals_the_in_memory_run(tmp_path):
    path = local_copy(tmp_path, **{"horizon = 4095": "horizon = 255"})  # the faithful preset uploads every round
    certs(path)
    result = CliRunner().invoke(standalone, ["deploy", "local", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "fclub-five-local-servers: parties" in result.output and "255 rounds" in result.output
    spec = load_deployment(path)
    assert len(spec.names("local_server")) == 5
    assert (spec.protocol.variant, spec.protocol.preset) == ("cdp-fclub-dc", "paper")
    got = assert_equals_in_memory(spec)
    counts, results = got["counts"], got["results"]
    assert counts.uploads > 100 and counts.downloads > 100 and counts.phase_uploads > 0  # every message kind ran
    # transcripts: the global server hears protocol messages only from the local servers, and from the users
    # only the public clock; a local server is linked to the users and the global server only
    local = set(spec.names("local_server"))
    heard = {(phase, sender) for phase, sender, *_ in results["global"]["received"]}
    assert {sender for phase, sender in heard if phase in PROTOCOL_PHASES} == local
    assert {phase for phase, sender in heard if sender == "users"} == {"schedule"}
    for name in local:
        assert {receiver for _, _, receiver, *_ in results[name]["traffic"]} == {"users", "global"}
        assert {sender for _, sender, *_ in results[name]["received"]} == {"users", "global"}
    assert all(result["refusals"] == [] for result in results.values())
    assert results["users"]["served"] == 255 and results["global"]["lost"] == {}

    # no upload the global server received carries raw statistics: the same run in memory, each upload compared
    # with every raw statistic of its sender at the moment of sending
    # (tests/protocols/fclub/test_message_boundary_fclub.py), received the very uploads the process did (equal digests)
    network = snooped_run(config_of(spec), spec.protocol.seed, environment_of(spec), 5)
    assert len(network.uploads) > 100 and [matches for _, matches in network.uploads if matches] == []
    assert upload_digest(uploads_of(network)) == results["global"]["uploads_digest"]


@pytest.mark.parametrize(
    ("variant", "horizon", "options"),
    [
        ("cdp-fclub-dc", 255, ""),  # the reference preset: shared statistics, noise only in the trigger
        ("fclub", 63, ""),  # synchronous, detection every round
        ("cdp-fclub-dc", 255, "options = { rebuild_local_copies = true }"),  # few uploads: download checks
    ],
)
def test_other_presets_equal_the_in_memory_run(tmp_path, variant, horizon, options):
    path = local_copy(tmp_path, servers=2, **{
        'variant = "cdp-fclub-dc"': f'variant = "{variant}"', 'preset = "paper"': 'preset = "reference"',
        "horizon = 4095": f"horizon = {horizon}",
        "# options = { rebuild_local_copies = true }": options,
    })  # fmt: skip
    certs(path)
    result = CliRunner().invoke(standalone, ["deploy", "local", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    got = assert_equals_in_memory(load_deployment(path))
    if options:
        checks = sum(got["results"][name]["counts"]["download_checks"] for name in ("local0", "local1"))
        assert checks > 0.5 * horizon


def test_a_killed_local_server_is_named_by_the_global_server_and_the_others_finish(tmp_path):
    """SIGKILL local2 of three mid-run: the global server names it and drops it; the users stop sending it users;
    the other local servers, the global server and the users finish (exit 0); every round before the first one
    local2 left unserved is the in-memory run's. Killed at round 300 of 1023: after the phase start at 255, with
    the one at 511 still to come."""
    from privbandits.deploy.local import start_parties, survivable, wait_parties

    deadline, kill_at = 5.0, 300
    path = local_copy(tmp_path, servers=3, **{"deadline_s = 10": f"deadline_s = {deadline}",
                                              "horizon = 4095": "horizon = 1023"})  # fmt: skip
    certs(path)
    spec = load_deployment(path)
    parties = start_parties(spec, tmp_path)
    try:
        by_name = {party.name: party for party in parties}
        progress = by_name["users"].process.stdout
        start = time.monotonic()
        for line in progress:  # "progress t T"
            if int(line.split()[1]) >= kill_at or time.monotonic() - start > 60:
                break
        os.kill(by_name["local2"].process.pid, signal.SIGKILL)
        killed = time.monotonic()
        codes = wait_parties(parties, deadline, survivable=survivable(spec))
        elapsed = time.monotonic() - killed
    finally:
        for party in parties:
            if party.process.poll() is None:
                party.process.kill()
    assert codes.pop("local2") == -signal.SIGKILL
    assert codes == dict.fromkeys(codes, 0), {p.name: p.stderr for p in parties}
    assert elapsed < 120  # the others finish their rounds (no countdown: a local server is survivable)
    got = outcome(spec)
    results = got["results"]
    glob, users = results["global"], results["users"]
    assert list(glob["lost"]) == ["local2"] and glob["lost"]["local2"].startswith("lost peer 'local2' in ")
    assert "lost local2" in glob["outcome"] and "the others finished" in glob["outcome"]
    assert list(users["lost"]) == ["local2"] and not spec.result_path("local2").exists()
    # after local2 is lost its users' rounds go unserved, and only theirs
    served = np.array([r is not None for r in users["regret"]])
    first_unserved = int(np.argmin(served))
    assert kill_at <= first_unserved and not served[first_unserved] and users["served"] < spec.protocol.horizon
    assert np.array_equal(served[first_unserved:], arrivals(spec)[first_unserved:] != 2)
    reference = run_in_memory(spec)
    assert np.array_equal(np.cumsum(users["regret"][:first_unserved]), reference.regret[:first_unserved])
    for name in ("local0", "local1"):
        assert results[name]["counts"]["served"] > 0


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (lambda t: t.replace("[parties.local1]", "[parties.localb]"), "must be named local0, local1, local2, local3"),
        (lambda t: t.replace("[parties.global]", "[parties.hub]"), "the global_server party must be named 'global'"),
        (lambda t: t.replace('role = "users"', 'role = "local_server"'), "exactly one party must have role 'users'"),
        (lambda t: t.replace('role = "users"', 'role = "users"\ndata = "data/users.npz"'),
         "parties.users.data: no FCLUB party reads a data file"),
        (lambda t: t.replace("n_users = 40 ", "n_users = 3 "), "n_clusters = 4 exceeds n_users = 3"),
        (lambda t: t.replace("# options = { rebuild_local_copies = true }", "options = { bogus = 1 }"),
         "options: unknown FCLUBConfig field"),
        (lambda t: t.replace("# options = { rebuild_local_copies = true }", "options = { upload_threshold = 0.5 }"),
         "options: upload_threshold"),
        (lambda t: t.replace('variant = "cdp-fclub-dc"', 'algorithm = "Homo-DC"'),
         "for algorithm = 'Homo-DC' write variant = 'homo-dc' and preset = 'reference'"),
        (lambda t: t.replace('variant = "cdp-fclub-dc"', 'algorithm = "CDP-FCLUB-DC (faithful)"'),
         "variant = 'cdp-fclub-dc' and preset = 'paper'"),
        (lambda t: t.replace('variant = "cdp-fclub-dc"', 'algorithm = "LinUCB"'),
         "algorithm is now variant and preset .*: variant is one of cdp-fclub-dc, fclub-dc, fclub, homo-dc, homo"),
    ],
)  # fmt: skip
def test_a_bad_fclub_deployment_file_names_the_field(tmp_path, edit, error):
    path = local_copy(tmp_path)
    path.write_text(edit(path.read_text()))
    with pytest.raises(DeploymentError, match=error):
        load_deployment(path)


def test_the_shipped_deployment_names_the_analytic_noise_in_its_digest(tmp_path):
    """Issue 47: the shipped CDP-FCLUB-DC (paper preset, its noise left out) is at the analytic Gaussian, named in
    its options, so its digest (checkpoints, served identities) differs from one at the paper's form, the default
    before; the reference preset keeps its own noise and its options."""
    path = local_copy(tmp_path)
    text = path.read_text()
    default = load_deployment(path)
    assert default.protocol.options == {"noise_variance": "analytic"}
    assert default.protocol.fclub_config().noise_variance == "analytic"
    path.write_text(
        text.replace("# options = { rebuild_local_copies = true }", 'options = {noise_variance = "squared_log"}')
    )
    paper = load_deployment(path)
    assert paper.protocol.fclub_config().noise_variance == "squared_log"
    assert paper.protocol_digest() != default.protocol_digest()
    path.write_text(text.replace('preset = "paper" ', 'preset = "reference" '))
    reference = load_deployment(path).protocol
    assert reference.options == {} and reference.fclub_config().noise_variance == "reference_std"


def test_resume_without_checkpoints_says_to_start_afresh(tmp_path):
    """--resume where no party holds a checkpoint: the users name the problem, every party ends, none starts afresh."""
    path = local_copy(tmp_path, servers=2, **{"horizon = 4095": "horizon = 63"})
    certs(path)
    result = CliRunner().invoke(standalone, ["deploy", "local", str(path), "--no-progress", "--resume"])
    assert result.exit_code != 0
    words = " ".join(re.sub(r"[│┃]", " ", result.output).split())  # the table wraps the reasons
    assert "no phase start whose checkpoint every party holds" in words, result.output
    assert not load_deployment(path).result_path("users").exists()


def test_deploy_data_says_fclub_needs_no_data_files(tmp_path):
    path = local_copy(tmp_path)
    result = CliRunner().invoke(standalone, ["deploy", "data", str(path)])
    assert result.exit_code == 0 and "fclub: no data files" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fclub.toml"]


@pytest.mark.parametrize(
    ("user", "contexts", "reward", "error"),
    [
        (39, None, 1.0, "'users' sent user 39 in round 1, whom 'local0' does not serve"),
        (0, np.zeros((10, 9)), 1.0, r"'users' sent contexts of shape \(10, 9\) \(float64\) in round 1; expected"),
        (0, np.full((10, 10), np.nan), 1.0, "expected finite float64 of shape"),
        (0, None, float("inf"), "'users' sent reward inf in round 1; expected a finite float"),
    ],
)
def test_a_local_server_refuses_a_malformed_round_from_the_users(tmp_path, user, contexts, reward, error):
    """What a local server checks in what the users send it (a hostile or broken users party), in memory."""
    from privbandits.comm import ProtocolError
    from privbandits.deploy.fclub.local_server import _LocalEvents, _serve
    from privbandits.deploy.fclub.messages import USERS, Arrival, Feedback

    spec, network, users, server, index = local0_in_memory(tmp_path)
    with network.phase(USERS):
        users.send("local0", Arrival(1, user, np.ones((10, 10)) / 10 if contexts is None else contexts))
        users.send("local0", Feedback(reward))
    with pytest.raises(ProtocolError, match=error):
        _serve(server, "users", index, _LocalEvents(), network, spec.protocol, False)


@pytest.mark.parametrize(
    ("arm", "served", "error"),
    [
        (10, 1, "'local0' chose arm 10 in round 1; the arms are 0..9"),
        (3, 7, "'local0' said round 7 was served while round 1 ran"),
    ],
)
def test_the_users_refuse_a_malformed_answer_from_a_local_server(arm, served, error):
    """What the users check in what a local server answers (a broken or hostile local server), in memory."""
    from types import SimpleNamespace

    from privbandits.comm import Party, ProtocolError
    from privbandits.deploy.fclub.messages import USERS, Choice, Served
    from privbandits.deploy.fclub.users import _round

    network = InMemoryNetwork(serialize=True)
    users, local = Party("users", network), Party("local0", network)
    with network.phase(USERS):
        local.send("users", Choice(arm))
        local.send("users", Served(served))
    env = SimpleNamespace(user=0, reward=lambda chosen: 1.0)
    with pytest.raises(ProtocolError, match=error):
        _round(users, "local0", 1, env, np.zeros((10, 10)), 10, network)


def test_by_default_each_local_server_draws_its_noise_from_os_entropy(tmp_path):
    """The shipped default: the session serves the seeded run's users on its phase schedule (the environment is
    the file's), but with the local servers' own noise: the global server receives other uploads (another digest),
    every result records the mode, and each local server's noise (its generators' states) is kept only in its own
    checkpoints, mode 0600."""
    horizon = 127
    path = local_copy(tmp_path, seeded=False, servers=2, **{"horizon = 4095": f"horizon = {horizon}"})
    certs(path)
    result = CliRunner().invoke(standalone, ["deploy", "local", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    spec = load_deployment(path)
    got = outcome(spec)
    results = got["results"]
    assert not spec.reproducible and {result["randomness"] for result in results.values()} == {"os"}
    network = InMemoryNetwork(record=True)
    reference = run_in_memory(spec.model_copy(update={"reproducible": True}), network)
    assert results["users"]["served"] == horizon and results["global"]["lost"] == {}
    for name in spec.names("local_server"):
        assert [t for t, *_ in results[name]["phases"]] == reference.bandit.phase_starts
    assert got["counts"].phase_uploads > 0 and 0 < got["regret"][-1] < horizon  # a reward is in [0, 1]
    again = InMemoryNetwork(record=True)
    run_in_memory(spec, again)  # another default run, in memory: other noise again
    digests = [upload_digest(uploads_of(run)) for run in (network, again)]
    assert len({results["global"]["uploads_digest"], *digests}) == 3
    for path in (spec.output / "checkpoints").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
