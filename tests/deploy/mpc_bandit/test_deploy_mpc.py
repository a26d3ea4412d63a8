"""The private ε-greedy bandit with every party in its own OS process over mutual TLS on 127.0.0.1.

The processes' decisions and per-link payload bytes must equal the stacked simulator's given
the same seeds; a computing party killed mid-run makes every other party exit non-zero, naming
it, in time; restarted with --resume the session decides as if it had never stopped.
"""

from __future__ import annotations

import os
import re
import signal
import tempfile
import time
from pathlib import Path

import pytest
from forked_parties import party_server  # noqa: F401 (a fixture)
from mpc_deployment import assert_same_as_in_memory, make_deployment, results
from project_paths import SHIPPED_DEPLOYMENTS
from typer.testing import CliRunner

from privbandits.deploy.cli import standalone
from privbandits.deploy.deployment import DeploymentError, load_deployment
from privbandits.deploy.local import start_parties, wait_parties
from privbandits.deploy.mpc_bandit.party import run_in_memory, saved_states
from privbandits.deploy.party import EXIT_LOST
from privbandits.experiments.later_options import MPC_LATER_OPTIONS as LATER_OPTIONS


def run_local(path: Path, *options: str) -> None:
    result = CliRunner().invoke(standalone, ["deploy", "local", str(path), "--no-progress", *options])
    assert result.exit_code == 0, result.output
    assert f"{load_deployment(path).protocol.rounds} rounds, cumulative reward" in result.output


@pytest.mark.parametrize(
    "computing", [2, pytest.param(3, marks=pytest.mark.slow)]  # 3 parties: the every-option test below, by default
)
def test_short_session_as_processes_decides_as_in_memory(tmp_path, computing):
    path = make_deployment(tmp_path, computing=computing, rounds=20)
    run_local(path)
    assert_same_as_in_memory(load_deployment(path))


@pytest.mark.parametrize(
    "options",
    [
        {},
        # each option alone and the steps between one option and all of them are slow: every option's party code
        # runs in the every-option case kept by default (and each option alone in memory, in test_mpc_bandit.py)
        pytest.param({"overlap_reciprocal": True}, marks=pytest.mark.slow),
        pytest.param({"overlap_reciprocal": True, "mask_factors": True}, marks=pytest.mark.slow),
        pytest.param({"overlap_reciprocal": True, "mask_factors": True, "allmax_lookup": True}, marks=pytest.mark.slow),
        {
            "overlap_reciprocal": True,
            "mask_factors": True,
            "allmax_lookup": True,
            "lookup_comparison": True,
            "goldschmidt": True,
            "dealt_exploration": True,
            "fused_input": True,
        },
        pytest.param({"allmax_lookup": True, "lookup_comparison": True}, marks=pytest.mark.slow),
        pytest.param({"fused_input": True}, marks=pytest.mark.slow),
    ],
)
def test_the_linear_reciprocal_start_as_processes_decides_as_in_memory(tmp_path, options):
    """Also with the reciprocal riding on the argmax's openings, the one-hot masking the updates' factors, the
    lookup argmax, its comparisons by table lookups, Goldschmidt's u/d, the dealt exploration and the fused
    input: each computing party's own riders (PartyChannel) send what the simulator's stacked ones do, each
    party truncates its own share (party 1 ceils), reads its own entries of the dealer's one-hots and tables,
    splits its own share into the comparison's digits and masks its own block of the context with the part of
    B the dealer told it; the dealer's process replays 1 − y_t of each round into its one-hot; the overlap runs
    pin every party to a core."""
    path = make_deployment(tmp_path, rounds=20, reciprocal_start="linear", nr_iterations=3, **options)
    overlap = options.get("overlap_reciprocal", False)
    run_local(path, *(["--pin-cpus"] if overlap and hasattr(os, "sched_setaffinity") else []))
    spec = load_deployment(path)
    assert {key: getattr(spec.protocol, key) for key in options} == options
    assert_same_as_in_memory(spec)


FASTEST = {"reciprocal_start": "linear", "nr_iterations": 3, **dict.fromkeys(LATER_OPTIONS, True)}
"""Every deployment option on: the schedule `benchmarks/network_latency.py` holds to its target."""


def test_three_computing_parties_with_every_option_they_allow_decide_as_in_memory(tmp_path):
    """The options that need no local truncation, with 3 computing parties (Alg. 3's truncation rounds): each
    party masks its own block of the context (fused_input), and the dealer's 1 − y_t rides on the count lookup."""
    options = {"allmax_lookup": True, "goldschmidt": True, "dealt_exploration": True, "fused_input": True}
    path = make_deployment(tmp_path, computing=3, rounds=20, reciprocal_start="linear", nr_iterations=3, **options)
    run_local(path)
    assert_same_as_in_memory(load_deployment(path))


@pytest.mark.slow
@pytest.mark.parametrize(("computing", "options"), [(2, {}), (3, {}), (2, FASTEST)])
def test_200_rounds_as_processes_decide_as_in_memory_with_the_same_bytes_per_link(tmp_path, computing, options):
    path = make_deployment(tmp_path, computing=computing, rounds=200, **options)
    run_local(path)
    assert_same_as_in_memory(load_deployment(path))


def kill_and_resume(
    tmp_path: Path, *, rounds: int, kill_after: int, checkpoint_every: int, server=None, **options
) -> None:
    """``server``: fork the parties from this running fork server (None: each start its own)."""
    deadline = 4.0
    path = make_deployment(tmp_path, deadline_s=deadline, rounds=rounds, checkpoint_every=checkpoint_every, **options)
    spec = load_deployment(path)
    parties = start_parties(spec, tmp_path, server=server)
    try:
        by_name = {party.name: party for party in parties}
        start = time.monotonic()
        for line in by_name["env"].process.stdout:  # the environment prints `progress t T` lines
            if int(line.split()[1]) >= kill_after or time.monotonic() - start > 60:
                break
        os.kill(by_name["c1"].process.pid, signal.SIGKILL)
        killed = time.monotonic()
        codes = wait_parties(parties, deadline)
        elapsed = time.monotonic() - killed
    finally:
        for party in parties:
            if party.process.poll() is None:
                party.process.kill()
    assert codes["c1"] == -signal.SIGKILL
    assert elapsed < deadline + 5.0
    for name in ("dealer", "c0", "env"):
        line = by_name[name].last_error
        assert codes[name] == EXIT_LOST, (name, by_name[name].stderr)
        assert line.startswith(f"party {name!r}: lost peer 'c1' in "), line
        assert "killed by the launcher" not in "".join(by_name[name].stderr)
    # nothing half-written: no result file for a session that did not finish, whole checkpoints
    assert not any(spec.result_path(name).exists() for name in spec.parties)
    held = {name: sorted(saved_states(spec, name)) for name in ("c0", "c1", "env")}
    assert all(rounds and rounds[-1] % checkpoint_every == 0 for rounds in held.values()), held

    # every party restarted with --resume: the session ends as if it had never stopped
    with tempfile.TemporaryDirectory() as workdir:
        parties = start_parties(spec, Path(workdir), resume=True, server=server)
        codes = wait_parties(parties, deadline)
    assert all(code == 0 for code in codes.values()), {p.name: p.stderr for p in parties}
    got = results(spec)
    resumed = got["env"]["resumed_after"]
    assert (
        resumed >= kill_after - checkpoint_every
        and resumed == got["c0"]["resumed_after"] == got["dealer"]["resumed_after"]
    )
    reference, _, _ = run_in_memory(spec)
    assert got["env"]["arms"] == reference.arms.tolist()


def test_a_killed_computing_party_stops_everyone_naming_it_and_resume_gives_the_uninterrupted_decisions(
    tmp_path,
    party_server,  # noqa: F811
):
    kill_and_resume(tmp_path, rounds=120, kill_after=40, checkpoint_every=20, server=party_server)


@pytest.mark.slow
def test_with_every_option_a_killed_party_is_resumed_to_the_uninterrupted_decisions(tmp_path):
    """The dealer replays its rounds with each round's 1 − y_t and each party's block of B, so a resumed session
    with every option on (FASTEST) is the uninterrupted one too."""
    kill_and_resume(tmp_path, rounds=300, kill_after=90, checkpoint_every=20, **FASTEST)


@pytest.mark.slow
def test_a_computing_party_killed_after_200_rounds_then_resumed(tmp_path):
    kill_and_resume(tmp_path, rounds=1200, kill_after=250, checkpoint_every=100)


def test_the_shipped_example_runs_with_certs_data_and_local(tmp_path):
    example = SHIPPED_DEPLOYMENTS / "mpc-epsilon-greedy.toml"
    text = re.sub(r'address = "127\.0\.0\.1:\d+"', 'address = "127.0.0.1:0"', example.read_text())
    path = tmp_path / "mpc-epsilon-greedy.toml"
    path.write_text(text.replace("rounds = 500", "rounds = 20"))
    runner = CliRunner()
    for command in (["deploy", "certs", str(path)], ["deploy", "data", str(path)]):
        result = runner.invoke(standalone, command)
        assert result.exit_code == 0, result.output
    run_local(path)
    assert_same_as_in_memory_example(load_deployment(path))


def assert_same_as_in_memory_example(spec) -> None:
    got = results(spec)
    reference, _, _ = run_in_memory(spec)
    assert got["environment"]["arms"] == reference.arms.tolist()


def test_the_shipped_mpc_example_is_a_valid_deployment():
    example = SHIPPED_DEPLOYMENTS / "mpc-epsilon-greedy.toml"
    spec = load_deployment(example)
    assert spec.protocol.name == "mpc-epsilon-greedy" and spec.names("computing") == ["bank", "shop"]
    assert spec.protocol.REPORTER == "environment"


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (lambda t: t.replace('role = "dealer"', 'role = "computing"'), "exactly one party must have role 'dealer'"),
        (lambda t: t.replace("partition = [3, 2]", "partition = [3, 2, 1]"), "needs 3 computing parties; found 2"),
        (lambda t: t.replace('data = "data/dealer.npz"\n', ""), r"parties.dealer.data: the dealer party needs"),
        (lambda t: t.replace('role = "environment"', 'role = "puller"'), "parties.env.role: must be one of"),
        (
            lambda t: t.replace(
                "partition = [3, 2]", 'partition = [3, 2]\ntruncation = "wraps"\noverlap_reciprocal = true'
            ),
            r"overlap_reciprocal needs local truncation \(2 computing parties, truncation 'auto' or 'local'\); "
            r"got 2 parties with truncation 'wraps'",
        ),
        (
            lambda t: t.replace("partition = [3, 2]", "partition = [3, 2]\nmask_factors = true"),
            r"mask_factors needs overlap_reciprocal = True \(its products ride on the argmax's openings\), got False",
        ),
        (
            lambda t: t.replace("partition = [3, 2]", "partition = [3, 2]\nlookup_comparison = true"),
            r"lookup_comparison needs allmax_lookup = True \(its comparisons are counted modulo 16\), got False",
        ),
        (
            lambda t: t.replace("n_arms = 4", "n_arms = 300\nallmax_lookup = true\nlookup_comparison = true"),
            r"lookup_comparison counts an arm's wins in a byte, so it takes at most 256 arms, got n_arms = 300",
        ),
        (
            lambda t: t.replace("partition = [3, 2]", "partition = [3, 2]\ndealt_exploration = true"),
            r"dealt_exploration needs allmax_lookup = True \(1 − y_t rides on the argmax's last lookup\), got False",
        ),
    ],
)
def test_a_bad_mpc_deployment_file_names_the_field(tmp_path, edit, error):
    path = make_deployment(tmp_path, rounds=5)
    path.write_text(edit(path.read_text()))
    with pytest.raises(DeploymentError, match=error):
        load_deployment(path)


def test_a_party_file_with_the_wrong_shape_is_named(tmp_path):
    import numpy as np

    path = make_deployment(tmp_path, rounds=5)
    spec = load_deployment(path)
    np.savez(spec.parties["c0"].data, contexts=np.zeros((5, 4)), share_seed=np.arange(4, dtype=np.uint64))
    from privbandits.deploy.mpc_bandit.party import load_computing

    with pytest.raises(DeploymentError, match=r"contexts must have shape \(rounds >= 5, 3\)"):
        load_computing(spec, "c0")
