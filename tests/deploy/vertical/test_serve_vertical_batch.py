"""Concurrent decisions of the served active party batched into one message per link (issue 46): the decides that
the service's worker runs in one group ask each passive party once for all of them (one ``RoundRequests``, one
answer), and decide exactly as the same decides one at a time, which ask once each."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest
from vertical_serving import PASSIVE, served_deployment, services_in_process

from privbandits.comm import ROUND
from privbandits.deploy.vertical.party import load_all
from privbandits.serve.decider import DecideInput
from privbandits.serve.role import FeaturePut
from privbandits.serve.service import DecisionService

GROUP = 9


def _preload(spec, services: dict[str, DecisionService]) -> None:
    data = load_all(spec, list(PASSIVE))
    for name in PASSIVE:
        service = services[name]
        for user, rows in zip(data[name].users.tolist(), data[name].features, strict=True):
            asyncio.run(service.call(service.put, FeaturePut(str(user), rows)))


def _linked(services: dict[str, DecisionService], timeout_s: float = 60.0):
    """The active role once linked with every party (each passive party serving its link session)."""
    role = services["active"].decider
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        passive_linked = all(services[name].decider.links._network is not None for name in PASSIVE)
        if role._ready.is_set() and passive_linked:
            return role
        time.sleep(0.05)
    raise AssertionError("the parties did not link")


def _messages(services: dict[str, DecisionService]) -> dict[str, tuple[int, int]]:
    """Per passive party, the messages of the current link session: sent to it by the active party, and its
    answers."""
    asked = services["active"].decider._party.network.traffic
    counts = {}
    for name in PASSIVE:
        answered = services[name].decider.links._network.traffic
        counts[name] = (asked.total(ROUND, "active", name).messages, answered.total(ROUND, name, "active").messages)
    return counts


async def _as_one_group(service: DecisionService, inputs: list[DecideInput]) -> list:
    """``inputs`` decided concurrently, queued while the worker is held busy, so they run as one group."""
    release = threading.Event()
    busy = asyncio.ensure_future(service.call(release.wait, 30))
    await asyncio.sleep(0.05)
    tasks = [asyncio.ensure_future(service.call(service.decide, each)) for each in inputs]
    await asyncio.sleep(0.1)
    release.set()
    await busy
    return await asyncio.gather(*tasks)


@pytest.mark.parametrize("secure_aggregation", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_a_group_of_decides_costs_one_message_per_link_and_decides_as_single_decides(tmp_path, secure_aggregation):
    path, spec = served_deployment(
        tmp_path, rounds=GROUP + 3, lacking={"passive3": [2]}, secure_aggregation=secure_aggregation
    )
    own = load_all(spec, ["active"])["active"]

    def inputs(prefix: str) -> list[DecideInput]:
        return [DecideInput(f"{prefix}-{t}", str(int(own.users[t])), own.features[t]) for t in range(GROUP)]

    with services_in_process(spec) as services:
        _preload(spec, services)
        _linked(services)
        active = services["active"]
        before, batches = _messages(services), active._worker.batches
        grouped = asyncio.run(_as_one_group(active, inputs("group")))
        after_group, group_batches = _messages(services), active._worker.batches - batches
        singles = [asyncio.run(active.call(active.decide, each)) for each in inputs("single")]
        after_singles = _messages(services)
    for name in PASSIVE:
        assert np.subtract(after_group[name], before[name]).tolist() == [1, 1], name
        assert np.subtract(after_singles[name], after_group[name]).tolist() == [GROUP, GROUP], name
    assert group_batches == 2  # the call that held the worker, then the group
    assert [event.arm for event in grouped] == [event.arm for event in singles]
    assert [event.event_state for event in grouped] == [event.event_state for event in singles]
    assert len({event.arm for event in grouped}) > 1  # decisions that differ, not one arm for all


@pytest.mark.slow
def test_a_link_failing_while_asking_ahead_costs_the_group_nothing_but_the_relink(tmp_path, monkeypatch):
    """The group's chunk fails (as a lost passive party would make it): the session ends, the parties link again, and
    each of the group's decisions asks alone, deciding as the same decisions one at a time."""
    from privbandits.comm import PeerLost

    path, spec = served_deployment(tmp_path, rounds=GROUP + 3)
    own = load_all(spec, ["active"])["active"]
    with services_in_process(spec) as services:
        _preload(spec, services)
        role = _linked(services)
        active, failed = services["active"], role._party

        def lost(requests) -> None:
            raise PeerLost("lost (the test)", peer="passive2")

        monkeypatch.setattr(failed, "ask_ahead", lost)
        inputs = [DecideInput(f"group-{t}", str(int(own.users[t])), own.features[t]) for t in range(GROUP)]
        grouped = asyncio.run(_as_one_group(active, inputs))
        assert role._party is not failed and role.links.sessions >= 2  # linked again
        singles = [
            asyncio.run(active.call(active.decide, DecideInput(f"single-{t}", each.user_id, each.features)))
            for t, each in enumerate(inputs)
        ]
    assert [event.arm for event in grouped] == [event.arm for event in singles]
    assert [event.event_state for event in grouped] == [event.event_state for event in singles]
