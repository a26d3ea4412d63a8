"""Deployment files have upper bounds that keep memory sane, checked when the file loads (issue 45): a size past a
field's bound, or sizes whose product would make one party hold more than ``MOST_NUMBERS`` numbers, are refused in
one line naming the fields, the limit and the values, before any party starts (they ended in ``MemoryError``
tracebacks before). Every field's own bounds, of every protocol, are the contract suite's
(tests/deploy/test_deployment_sections.py: a value just past each bound and one far past it); here, the bounds
that span fields."""

from __future__ import annotations

import tomllib

import pytest
from project_paths import SHIPPED_DEPLOYMENTS

from privbandits.deploy.deployment import DeploymentError, parse_deployment
from privbandits.deploy.deployment_parts import MOST_NUMBERS

SHIPPED = SHIPPED_DEPLOYMENTS


def section(name: str, **changes) -> dict:
    data = tomllib.loads((SHIPPED / f"{name}.toml").read_text())
    data["protocol"].update(changes)
    return data


@pytest.mark.parametrize(
    ("name", "changes", "message"),
    [
        ("vertical-vfucb", {"partition": [20, 20_000]},
         "protocol.partition: every block needs 1 to 10,000 features, got [20, 20000]"),
        ("vertical-vfucb", {"rounds": 1_000_000},
         "protocol: rounds (1,000,000) × n_arms (10) × features (100) = 1,000,000,000 numbers in the data files (a "
         "context per round and arm), at most 100,000,000 (800 MB as float64): make one of them smaller"),
        ("mpc-epsilon-greedy", {"n_arms": 10_000, "partition": [1000, 1000]},
         "protocol: n_arms (10,000) × features (2,000) × features (2,000) = 40,000,000,000 numbers in the learner's "
         "shared statistics (a d × d matrix per arm), at most 100,000,000 (800 MB as float64): make one of them "
         "smaller"),
        ("p2b", {"n_users": 10**7, "interactions": 100},
         "protocol: n_users (10,000,000) × interactions (100) × dim (5) = 5,000,000,000 numbers in the device hosts' "
         "data files (every interaction's context), at most 100,000,000 (800 MB as float64): make one of them "
         "smaller"),
        ("fclub", {"n_users": 10**6, "dim": 100},
         "protocol: n_users (1,000,000) × dim (100) × dim (100) = 10,000,000,000 numbers in the local servers' "
         "statistics (a d × d matrix per user), at most 100,000,000 (800 MB as float64): make one of them smaller"),
    ],
)  # fmt: skip
def test_sizes_past_their_bounds_are_refused_when_the_file_loads(name, changes, message):
    with pytest.raises(DeploymentError) as refused:
        parse_deployment(section(name, **changes))
    assert str(refused.value) == message


@pytest.mark.parametrize("name", ["vertical-vfucb", "p2b", "mpc-epsilon-greedy", "fclub"])
def test_the_shipped_deployments_load_within_the_bounds(name):
    assert parse_deployment(section(name)).protocol.name


def test_the_largest_sizes_within_the_bounds_still_load():
    """The product check refuses only past MOST_NUMBERS: exactly at it, the file loads."""
    rounds = MOST_NUMBERS // (10 * 100)
    assert parse_deployment(section("vertical-vfucb", rounds=rounds)).protocol.rounds == rounds
    with pytest.raises(DeploymentError, match="at most 100,000,000"):
        parse_deployment(section("vertical-vfucb", rounds=rounds + 1))


@pytest.mark.parametrize(
    ("name", "partition", "message"),
    [
        ("vertical-vfucb", [20, 20, 20, 40],
         "parties: partition [20, 20, 20, 40] has 4 blocks, so it needs 3 passive parties; found 2"),
        ("mpc-epsilon-greedy", [5, 5, 10],
         "parties: partition [5, 5, 10] has 3 blocks, so it needs 3 computing parties; found 2"),
    ],
)  # fmt: skip
def test_a_partition_needs_one_party_per_block_it_gives_out(name, partition, message):
    with pytest.raises(DeploymentError) as refused:
        parse_deployment(section(name, partition=partition))
    assert str(refused.value) == message
