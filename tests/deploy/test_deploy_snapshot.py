"""deploy/snapshot.py: a party's state as arrays and JSON, without pickle. A local server checkpointed mid-run
and put back into a fresh one goes on exactly as the original (the same arms, triggers, noise and uploads);
identity survives (clusters shared by index and map, privatizer trees drawing from their server's generator);
a checkpoint naming a class outside privbandits, or a state holding something else, is refused; a checkpoint written
before ``protocols/fclub.py`` became a package still decodes."""

from __future__ import annotations

import importlib
import json
import re

import numpy as np
import pytest
from fclub_runs import _bandit

from privbandits.comm import InMemoryNetwork, Party
from privbandits.deploy import snapshot
from privbandits.protocols.fclub import LocalServer, Repairs, Upload
from privbandits.protocols.fclub.config import Calibration, FCLUBConfig
from privbandits.protocols.fclub.global_server import _GlobalCluster, _Member
from privbandits.protocols.fclub.local_server import _LocalCluster


def _copy(server: LocalServer, network) -> LocalServer:
    arrays, tree = snapshot.encode({"server": server.state()})
    tree = json.loads(json.dumps(tree))  # as a checkpoint stores it
    state = snapshot.decode({k: v.copy() for k, v in arrays.items()}, tree)["server"]
    fresh = LocalServer(server.name, network, server.users, server.dim, Calibration(server.config, 5, 12, 2),
                        np.random.default_rng(0))  # fmt: skip
    fresh.restore(state)
    return fresh


def test_a_local_server_restored_mid_run_goes_on_as_the_original():
    bandit, env = _bandit(300)
    original = bandit.servers[0]
    network = InMemoryNetwork()
    glob = Party("global", network)
    copy = _copy(original, network)
    assert all(tree.rng is copy.rng for c in copy.clusters.values() for tree in (c.async_tree, c.phase_tree) if tree)
    assert all(copy.cluster_of[i] is copy.clusters[copy.cluster_of[i].uid] for i in range(len(copy.users)))
    rng = np.random.default_rng(5)
    uploads = 0
    for _ in range(200):
        i, contexts = int(rng.integers(6)), rng.normal(size=(6, 5)) / 3
        arms = [server.recommend(i, contexts) for server in (original, copy)]
        assert arms[0] == arms[1]
        y = float(rng.random())
        fired = [server.observe(i, contexts[arms[0]], y) for server in (original, copy)]
        assert (fired[0] is None) == (fired[1] is None)
        if fired[1] is not None:
            original.network, original._sender = network, copy._sender  # the original sends on the same network
            with network.phase("async"):
                original.upload(fired[0])
                copy.upload(fired[1])
            sent = [glob.receive(Upload.kind, copy.name) for _ in range(2)]
            assert np.array_equal(sent[0].gram, sent[1].gram) and sent[0].count == sent[1].count
            uploads += 1
    assert uploads > 5
    assert np.array_equal(original.V, copy.V) and original.counts == copy.counts
    assert original.ledger.rows() == copy.ledger.rows()


def test_a_checkpoint_naming_another_module_or_holding_another_type_is_refused():
    arrays, tree = snapshot.encode({"ledger": FCLUBConfig(horizon=3).ridge, "repairs": _bandit(3)[0].repairs})
    tree["repairs"]["object"] = "os:system"
    with pytest.raises(ValueError, match="a checkpoint may only name privbandits classes, not 'os:system'"):
        snapshot.decode(arrays, tree)
    with pytest.raises(TypeError, match="cannot checkpoint a function"):
        snapshot.encode({"hook": lambda: None})


def test_a_checkpoint_that_names_the_classes_of_the_single_fclub_module_still_decodes():
    """Issue 32 split ``protocols/fclub.py`` into the package ``protocols/fclub/``: a checkpoint written before names
    its classes ``privbandits.protocols.fclub:NAME``, which the package still serves."""
    bandit, _ = _bandit(300)
    local, glob = bandit.servers[0], bandit.global_server
    state = {"local": local.state(), "global": glob.state()}
    arrays, tree = snapshot.encode(state)
    text = json.dumps(tree)
    moved = set(re.findall(r'"privbandits\.protocols\.fclub\.\w+:(\w+)"', text))
    assert moved == {"PhaseUpload", "Repairs", "_LocalCluster", "_GlobalCluster", "_Member"}
    before = json.loads(re.sub(r'"privbandits\.protocols\.fclub\.\w+:', '"privbandits.protocols.fclub:', text))
    decoded = snapshot.decode({k: v.copy() for k, v in arrays.items()}, before)

    assert type(decoded["local"]["repairs"]) is Repairs
    clusters = decoded["local"]["clusters"]
    assert {type(c) for c in clusters.values()} == {_LocalCluster}
    assert all(np.array_equal(clusters[uid].S, c.S) for uid, c in local.clusters.items())
    members = decoded["global"]["members"]
    assert members.keys() == glob.members.keys() and {type(m) for m in members.values()} == {_Member}
    assert {type(m.cluster) for m in members.values()} == {_GlobalCluster}
    assert all(np.array_equal(members[k].cluster.S, m.cluster.S) for k, m in glob.members.items())


def test_a_checkpoint_that_names_a_module_moved_into_a_protocol_package_still_decodes():
    """Issue 45 moved ``protocols/fclub_messages.py`` (and the other modules :data:`snapshot.MOVED` lists) into the
    protocols' packages: a checkpoint written before names its classes by the old module, and still decodes."""
    bandit, _ = _bandit(300)
    arrays, tree = snapshot.encode({"local": bandit.servers[0].state(), "global": bandit.global_server.state()})
    text = json.dumps(tree)
    assert '"privbandits.protocols.fclub.messages:PhaseUpload"' in text
    old = text.replace('"privbandits.protocols.fclub.messages:', '"privbandits.protocols.fclub_messages:')
    before = json.loads(old)
    decoded = snapshot.decode({k: v.copy() for k, v in arrays.items()}, before)
    again = snapshot.decode({k: v.copy() for k, v in arrays.items()}, tree)
    assert json.dumps(snapshot.encode(decoded)[1]) == json.dumps(snapshot.encode(again)[1])


@pytest.mark.parametrize("old", sorted(snapshot.MOVED))
def test_every_moved_module_serves_its_classes_under_the_old_name(old):
    new = importlib.import_module(snapshot.MOVED[old])
    classes = [name for name, value in vars(new).items()
               if isinstance(value, type) and value.__module__ == new.__name__]  # fmt: skip
    assert classes, f"{new.__name__} defines no class"
    for name in classes:
        assert snapshot._class(f"{old}:{name}") is getattr(new, name)


def test_equal_sets_are_written_the_same_whatever_order_their_items_came_in():
    """Equal sets whose items came in other orders, and so iterate in other orders (colliding hashes), encode byte
    for byte the same and decode to the values they were: a partition (a set of sets, which ``<`` orders only by
    inclusion) and a set of numbers. Built from integers, whose hashes do not depend on the process's hash seed."""
    blocks = [frozenset({(8 * i, 0)}) for i in range(5)]
    values = [
        (frozenset(blocks), frozenset([blocks[i] for i in (1, 2, 4, 3, 0)])),
        (frozenset([2, 10, 18, 26, 34]), frozenset([34, 2, 10, 18, 26])),
    ]
    for first, second in values:
        assert first == second and list(first) != list(second)  # the case at hand: equal, iterated differently
        written = [snapshot.encode({"v": value}) for value in (first, second)]
        assert written[0][1] == written[1][1]
        assert snapshot.decode(*written[0])["v"] == first
