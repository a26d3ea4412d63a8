"""A small deployment of the private ε-greedy bandit (certificates and data made) and its check against the stacked
simulator: for the MPC deployment's tests and those that run every protocol's (flood, stall, zygote).

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import json
from pathlib import Path

from privbandits.deploy.certs import write_development_pki
from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.mpc_bandit.party import run_in_memory, write_synthetic_data


def make_deployment(
    folder: Path, *, computing: int = 2, deadline_s: float = 60.0, checkpoint_every: int = 100, **protocol
) -> Path:
    """Dealer, ``computing`` computing parties and the environment, with certificates and data."""
    partition = [3, 2, 2][:computing] if computing <= 3 else [1] * computing
    settings = {"partition": partition, "n_arms": 4, "rounds": 200, "epsilon": 0.1, "seed": 3, **protocol}
    roles = {"dealer": "dealer", **{f"c{i}": "computing" for i in range(computing)}, "env": "environment"}
    lines = [
        'name = "mpc-test"',
        'ca = "certs/ca.pem"',
        f"deadline_s = {deadline_s}",
        "connect_deadline_s = 30",
        f"checkpoint_every = {checkpoint_every}",
        "\n[protocol]",
        'name = "mpc-epsilon-greedy"',
    ]
    lines += [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    for name, role in roles.items():
        lines += [
            f"\n[parties.{name}]",
            f'role = "{role}"',
            'address = "127.0.0.1:0"',
            f'certificate = "certs/{name}.pem"',
            f'key = "certs/{name}.key"',
            f'data = "data/{name}.npz"',
        ]
    path = folder / "deploy.toml"
    path.write_text("\n".join(lines) + "\n")
    write_development_pki(folder / "certs", list(roles))
    write_synthetic_data(load_deployment(path))
    return path


def results(spec) -> dict[str, dict]:
    return {name: json.loads(spec.result_path(name).read_text()) for name in spec.parties}


def assert_same_as_in_memory(spec) -> None:
    got = results(spec)
    reference, network, learner = run_in_memory(spec)
    assert got["env"]["arms"] == reference.arms.tolist()
    # the online phases: every process's ledger holds the links it sends on; together, the simulator's
    online = sorted(tuple(row) for result in got.values() for row in result["traffic"] if row[0] != "offline")
    assert online == network.traffic.rows()
    # what each party received is what its peers sent
    sent = sorted(tuple(row[:5]) for result in got.values() for row in result["traffic"])
    received = sorted(tuple(row[:5]) for result in got.values() for row in result["received"])
    assert sent == received
    # offline: the dealer sends each computing party exactly its shares of the simulator's material
    # (8 more bytes a message: the round number)
    offline = [row for row in got["dealer"]["traffic"] if row[0] == "offline"]
    assert {row[2] for row in offline} == set(spec.names("computing"))
    assert sum(row[4] - 8 * row[3] for row in offline) == sum(learner.engine.dealer.issued.values())
    # no refusal but what a loaded host causes (a legitimate handshake past the 5 s timeout, retried by its dialer)
    refusals = [reason for result in got.values() for reason in result["refusals"]]
    assert all(any(load in reason for load in LOAD_REFUSALS) for reason in refusals), refusals
    assert got["env"]["openings"] == spec.protocol.rounds
    # each party's process time over its rounds (what benchmarks/network_latency.py prints)
    assert all(0 < result["cpu_seconds_per_round"] < 1 for result in got.values())


LOAD_REFUSALS = (
    "handshake timeout",
    "sent no hello in time",
    "closed the connection during the hello",
    "UNEXPECTED_EOF_WHILE_READING",  # the dialer gave up on the TLS handshake itself (its timeout) and closed
)
"""What a listener notes when a legitimate peer's handshake is slowed past its timeout; the peer dials again."""
