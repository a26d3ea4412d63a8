"""Replay equivalence of a served FCLUB federation (issue 46): the shipped deployment's synthetic arrivals (what the
users party of ``deploy`` draws from the file's seed), sent one event at a time over HTTP to the user's local server,
each reward right after its decision, get exactly the in-memory run's decisions in reproducible mode (which
``deploy local`` equals: tests/deploy/fclub/test_deploy_fclub.py). The parties are real ``privbandits serve``
processes on 127.0.0.1, linked by mutual TLS with the certificates of ``deploy certs``; the API is TLS too.
"""

from __future__ import annotations

import signal

import pytest
from cli_runner import separate
from fclub_serving import (
    add_token,
    arrivals,
    client,
    in_memory_arms,
    owner_of,
    phase_starts,
    serve_all,
    served_copy,
    stop_all,
)

from privbandits.cli import app
from privbandits.logs.files import load_log
from privbandits.serve.client import ServeError


def replay(spec, urls: dict[str, str], tokens: dict[str, str]) -> list[int]:
    """Every round's decision at its user's local server, its reward sent right after; the arms."""
    clients = {name: client(spec, name, urls[name], token) for name, token in tokens.items()}
    owner, arms = owner_of(spec), []
    try:
        for t, (user, contexts, rewards) in enumerate(arrivals(spec)):
            local = clients[owner[user]]
            decision = local.decide(f"round-{t + 1}", str(user), contexts.tolist())
            arms.append(decision.arm)
            local.reward(f"round-{t + 1}", float(rewards[decision.arm]))
    finally:
        for each in clients.values():
            each.close()
    return arms


def served_replay(tmp_path, servers: int, horizon: int) -> None:
    spec = served_copy(tmp_path, servers=servers, horizon=horizon)
    names = ["global", *spec.names("local_server")]
    tokens = {name: add_token(spec, name) for name in names}
    processes, urls = serve_all(spec)
    try:
        arms = replay(spec, urls, {name: tokens[name] for name in spec.names("local_server")})
        ledgers = {}
        for name in names:
            with client(spec, name, urls[name], tokens[name]) as api:
                ledgers[name] = api.ledger()
        with client(spec, "local0", urls["local0"], tokens["local0"]) as api, pytest.raises(ServeError) as refused:
            api.decide("elsewhere", str(spec.protocol.n_users - 1), arrivals(spec)[0][1].tolist())
        with client(spec, "global", urls["global"], tokens["global"]) as api, pytest.raises(ServeError) as no_api:
            api.decide("anything", "0", arrivals(spec)[0][1].tolist())
    finally:
        codes = stop_all(processes)
    assert arms == in_memory_arms(spec)
    owners = owner_of(spec)
    target = tmp_path / "log.dsjson"
    exported = separate().invoke(app, ["serve-export", str(tmp_path / "fclub.toml"), "--as", "local0", str(target)])
    assert exported.exit_code == 0, exported.stderr  # local0's own decision log: its users' events, in their order
    log = load_log(target)
    users = [user for user, _, _ in arrivals(spec)]
    mine = [(t, arm) for t, (user, arm) in enumerate(zip(users, arms, strict=True)) if owners[user] == "local0"]
    assert list(log.event_id) == [f"round-{t + 1}" for t, _ in mine] and log.action.tolist() == [a for _, a in mine]
    for name in spec.names("local_server"):
        count = sum(owners[user] == name for user, _, _ in arrivals(spec))
        assert ledgers[name]["events"]["rewarded"] == ledgers[name]["learner"]["rewards_absorbed"] == count
        assert ledgers[name]["learner"]["phase_starts"] == phase_starts(horizon)
    assert ledgers["global"]["learner"]["rounds"] == horizon and ledgers["global"]["learner"]["lost"] == {}
    assert refused.value.status == 422 and refused.value.field == "user_id"
    assert no_api.value.status == 404  # the global server has no application API
    assert all(code in (0, -signal.SIGTERM) for code in codes.values()), codes  # uvicorn ends by the signal


@pytest.mark.slow  # seven interpreter starts; the in-process roles' replay (test_serve_fclub_roles) is the default
def test_a_replay_over_http_gets_the_in_memory_runs_decisions(tmp_path):
    served_replay(tmp_path, servers=2, horizon=15)


@pytest.mark.slow
def test_the_shipped_five_local_servers_replayed_over_http_get_the_in_memory_runs_decisions(tmp_path):
    served_replay(tmp_path, servers=5, horizon=255)
