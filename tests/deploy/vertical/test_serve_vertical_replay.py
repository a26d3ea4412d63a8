"""Vertical O3M served by ``privbandits serve``, one real process per party on 127.0.0.1 (the API over TLS with
each party's certificate, the inter-party links mutual TLS): a replay client sends the deployment's data files over
HTTP (each passive party's rows through ``/v1/features``, then each round's user and the active party's own
features, the chosen arm's reward right after) and gets exactly the decisions of the in-memory run (reproducible
mode), which ``deploy local`` equals (tests/deploy/vertical/test_deploy_vertical.py)."""

from __future__ import annotations

import pytest
from vertical_serving import preload_passive, replay, served, served_deployment, served_in_process, wait_linked

from privbandits.deploy.vertical.party import run_in_memory


def _replayed(tmp_path, rounds: int, *, processes: bool, **settings) -> None:
    path, spec = served_deployment(tmp_path, rounds=rounds, lacking={"passive3": [3, 5]}, **settings)
    with served(path, spec) if processes else served_in_process(spec) as parties:
        clients = parties[1] if processes else parties
        preload_passive(spec, clients)
        wait_linked(clients["active"])
        arms = replay(spec, clients["active"], range(rounds))
        ledgers = {name: each.ledger() for name, each in clients.items()}
    reference, _ = run_in_memory(spec)
    assert arms == reference.arms.tolist()
    assert ledgers["active"]["events"] == {"open": 0, "rewarded": rounds, "expired": 0}
    assert ledgers["active"]["learner"]["rewards_absorbed"] == rounds
    passive3 = ledgers["passive3"]["learner"]
    assert (passive3["users"], passive3["requests_answered"], passive3["answered_with_zeros"]) == (
        rounds - 2,
        rounds,
        2,
    )
    assert ledgers["mask_generator"]["learner"]["mask_distributions"] >= 1


def test_a_replay_through_the_api_gets_the_in_memory_vfucb_decisions(tmp_path):
    """The quick version: every party's service in this process (the links between them TLS all the same)."""
    _replayed(tmp_path, 24, processes=False)


@pytest.mark.slow
def test_a_replay_over_http_to_served_processes_gets_the_in_memory_vfucb_decisions(tmp_path):
    _replayed(tmp_path, 60, processes=True)


@pytest.mark.slow
@pytest.mark.parametrize("secure_aggregation", [False, True])
def test_a_longer_vfts_replay_over_http_gets_the_in_memory_decisions(tmp_path, secure_aggregation):
    _replayed(tmp_path, 150, processes=True, policy="vfts", secure_aggregation=secure_aggregation)
