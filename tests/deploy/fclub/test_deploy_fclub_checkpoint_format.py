"""What an FCLUB party's checkpoint holds is declared by its classes (``privbandits.checkpointed``): every attribute
of a fresh party object is either saved or declared not saved; a state whose fields differ is refused naming them,
leaving the object as it was; checkpoints of format 1 (written before the declarations: objects whole, or every
attribute but the links and configuration) still load into the same state; an unknown format is refused."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from fclub_deployment import small
from fclub_runs import _bandit

from privbandits.checkpointed import PARTY, StateMismatch
from privbandits.comm import InMemoryNetwork, Traffic
from privbandits.deploy import checkpoint, snapshot
from privbandits.deploy.deployment import DeploymentError
from privbandits.deploy.fclub.global_server import DeployedGlobal
from privbandits.deploy.fclub.local_server import _LocalEvents
from privbandits.deploy.fclub.resume import load, save
from privbandits.deploy.fclub.users import _Clock, _Record
from privbandits.protocols.fclub import LocalServer
from privbandits.protocols.fclub.config import Calibration

OLD_NOT_SAVED = frozenset({"network", "endpoint", "_sender", "cal", "config"})
"""What format 1 left out of a party object (deploy/fclub/resume.py's NOT_SAVED before the declarations)."""


def network() -> InMemoryNetwork:
    net = InMemoryNetwork()
    net.received = Traffic()  # what load adds the saved counters to, as on a TlsNetwork
    return net


def fresh_local(server: LocalServer, net) -> LocalServer:
    calibration = Calibration(server.config, server.dim, 12, 2)
    return LocalServer(server.name, net, server.users, server.dim, calibration, np.random.default_rng(0))


def fresh_global(glob, net) -> DeployedGlobal:
    return DeployedGlobal(net, list(glob.servers), glob.dim, Calibration(glob.config, glob.dim, 12, 2))


def played():
    """A local server and a deployed global server 300 rounds into a private run, and events and a record."""
    bandit, _ = _bandit(300)
    local = bandit.servers[0]
    glob = fresh_global(bandit.global_server, InMemoryNetwork())
    glob.restore({**bandit.global_server.state(), "lost": {"local1": "gone"}, "undelivered": 3,
                  "uploads_digest": "ab12"})  # fmt: skip
    events = _LocalEvents()
    events.counts["uploads"], events.phases, events.upload_rounds = 7, [[1, 2, 0], [3, 1, 1]], [4, 9]
    record, clock = _Record(5), _Clock()
    record.score(1, 2, 1.0, np.array([0.5, 0.25, 1.0]))
    clock.starts(1)
    return local, glob, events, record, clock


def save_format_1(spec, name: str, t: int, state: dict) -> None:
    """What deploy/fclub_resume.save wrote before the declarations (no ``format`` in the file)."""
    arrays, tree = snapshot.encode(state)
    meta = {"digest": spec.protocol_digest(), "t": t, "state": tree, "traffic": [], "received": []}
    checkpoint.save(spec.checkpoint_path(name).with_name(f"{name}.t{t}.npz"), arrays, meta)


def old_attributes(party: object, skip: frozenset[str] = OLD_NOT_SAVED) -> dict:
    return {key: value for key, value in vars(party).items() if key not in skip}


def assert_same_local(got: LocalServer, want: LocalServer) -> None:
    assert np.array_equal(got.V, want.V) and np.array_equal(got.b, want.b) and got.counts == want.counts
    assert got.ledger.rows() == want.ledger.rows() and got.repairs == want.repairs
    assert got.rng.bit_generator.state == want.rng.bit_generator.state
    assert sorted(got.clusters) == sorted(want.clusters) and got._next_uid == want._next_uid
    assert all(np.shares_memory(row[0], got.V) for row in got._rows)  # its per-user views rebuilt on the restored V


def assert_same_global(got: DeployedGlobal, want: DeployedGlobal) -> None:
    assert got.partition == want.partition and got.members.keys() == want.members.keys()
    assert (got.lost, got.undelivered, got.uploads_digest) == (want.lost, want.undelivered, want.uploads_digest)
    assert (got.changed_phases, got.idle_downloads, got._received) == (want.changed_phases, want.idle_downloads,
                                                                        want._received)  # fmt: skip


def test_every_attribute_of_a_checkpointed_party_object_is_declared_saved_or_not():
    local, glob, events, record, clock = played()
    for party in (local, glob, events, record, clock):
        cls = type(party)
        assert not set(cls.SAVED) & cls.NOT_SAVED, cls
        assert set(vars(party)) == set(cls.SAVED) | cls.NOT_SAVED, cls
    assert PARTY <= LocalServer.NOT_SAVED and PARTY <= DeployedGlobal.NOT_SAVED


def test_a_state_with_missing_or_unknown_fields_is_refused_naming_them_and_nothing_changes():
    record = _Record(3)
    state = {"regret": np.zeros(3), "arms": np.zeros(3, dtype=np.int64), "clicks": 1}
    with pytest.raises(StateMismatch) as refused:
        record.restore(state)
    assert str(refused.value) == ("the saved state of a _Record lacks ['rewards'] and has unknown ['clicks'] "
                                  "(its fields: ['regret', 'rewards', 'arms'])")  # fmt: skip
    assert np.isnan(record.regret).all() and (record.arms == -1).all()  # untouched


def assert_restored(spec, local, glob, events, record, clock, legacy: bool) -> dict:
    """Each party's checkpoint at t = 7 loaded and restored into fresh objects, which equal the saved ones; the
    loaded checkpoints by party."""
    loaded = {name: load(spec, name, 7, network()) for name in ("local0", "global", "users")}
    assert {name: got.legacy for name, got in loaded.items()} == dict.fromkeys(loaded, legacy)
    copy, copy_events = fresh_local(local, InMemoryNetwork()), _LocalEvents()
    loaded["local0"].restore({"server": copy, "events": copy_events})
    assert_same_local(copy, local)
    assert vars(copy_events) == vars(events)
    copy_glob = fresh_global(glob, InMemoryNetwork())
    loaded["global"].restore({"glob": copy_glob})
    assert_same_global(copy_glob, glob)
    copy_record, copy_clock = _Record(5), _Clock()
    loaded["users"].restore({"record": copy_record, "clock": copy_clock})
    assert np.array_equal(copy_record.arms, record.arms) and np.array_equal(copy_record.rewards, record.rewards)
    assert np.array_equal(copy_record.regret, record.regret, equal_nan=True)
    assert vars(copy_clock) == vars(clock) == {"phase": 1, "next_start": 3}
    return loaded


def test_a_checkpoint_round_trips_each_party_objects_declared_state(tmp_path):
    spec = small(tmp_path)
    local, glob, events, record, clock = played()
    save(spec, "local0", 7, {"server": local, "events": events}, network())
    save(spec, "global", 7, {"glob": glob, "downloads": {"local0": [1]}, "changed": [3], "crossed": 0}, network())
    save(spec, "users", 7, {"record": record, "clock": clock, "lost": {}}, network())
    loaded = assert_restored(spec, local, glob, events, record, clock, legacy=False)
    session = loaded["global"]
    assert (session["downloads"], session["changed"], session["crossed"]) == ({"local0": [1]}, [3], 0)


def test_a_checkpoint_of_format_1_still_loads_into_the_same_state(tmp_path):
    spec = small(tmp_path)
    local, glob, events, record, clock = played()
    save_format_1(spec, "local0", 7, {"server": old_attributes(local, OLD_NOT_SAVED | {"_rows"}), "events": events})
    save_format_1(spec, "global", 7, {"glob": old_attributes(glob), "downloads": {}, "changed": [], "crossed": 2})
    save_format_1(spec, "users", 7, {"record": record, "clock": clock, "lost": {"local1": "gone"}})
    loaded = assert_restored(spec, local, glob, events, record, clock, legacy=True)
    assert loaded["global"]["crossed"] == 2 and loaded["users"]["lost"] == {"local1": "gone"}


def test_a_checkpoint_whose_fields_differ_or_of_an_unknown_format_is_refused_naming_the_file(tmp_path):
    spec = small(tmp_path)
    save_format_1(spec, "users", 7, {"record": {"regret": [], "rewards": []}, "clock": {}})
    refused = re.escape("users.t7.npz ('record'): the saved state of a _Record lacks ['arms'] "
                        "(its fields: ['regret', 'rewards', 'arms']); start the session afresh")
    with pytest.raises(DeploymentError, match=refused):
        load(spec, "users", 7, network()).restore({"record": _Record(5)})
    with pytest.raises(DeploymentError, match=r"users\.t7\.npz holds no 'events'"):
        load(spec, "users", 7, network()).restore({"events": _LocalEvents()})
    path = spec.checkpoint_path("users").with_name("users.t7.npz")
    arrays, meta = checkpoint.load(path)
    checkpoint.save(path, arrays, {**json.loads(json.dumps(meta)), "format": 3})
    with pytest.raises(DeploymentError, match=r"users\.t7\.npz has checkpoint format 3; this version reads 1 and 2"):
        load(spec, "users", 7, network())
