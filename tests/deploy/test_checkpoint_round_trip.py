"""Contract: the checkpoint a deployed party writes at a round boundary loads back into the same state, for every
registered protocol, through each protocol's own save and load (``privbandits.deploy.<p>``), from one test.

Each protocol's party state comes from its in-memory run (the quick deployment of ``protocol_harness``, or a learner
played a few rounds): it is written where the party writes it (the deployment's ``output``), loaded as a resumed party
loads it, into a freshly built party, and compared as :func:`privbandits.deploy.snapshot.encode` writes it (every array,
number and generator state). The protocol-specific guarantees of resuming (the session then equals the uninterrupted
one) are each deployment's kill-and-resume tests (``tests/deploy/<p>/``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from protocol_harness import Recording, honest_run, run_in_memory, small_deployment

from privbandits.comm import InMemoryNetwork, Traffic
from privbandits.deploy import checkpoint, snapshot
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.registry import PROTOCOLS

pytestmark = pytest.mark.filterwarnings("ignore:FCLUB. privatizer noise exceeded")


def encoded(state: dict[str, Any]) -> dict[str, tuple[str, dict[str, tuple]]]:
    """Each value of ``state`` as a checkpoint stores it: the JSON tree and each array's dtype, shape and bytes (each
    party's on its own: parties of one in-memory run may share objects that a checkpoint of each holds apart)."""
    coded = {}
    for key, value in state.items():
        arrays, tree = snapshot.encode({key: value})
        coded[key] = json.dumps(tree), {k: (a.dtype.str, a.shape, a.tobytes()) for k, a in arrays.items()}
    return coded



def _vertical(spec: Deployment) -> tuple[dict, dict]:
    """The active party's learner and decisions (its checkpoint: the learner's statistics and generator, the round;
    the decisions in the log beside it)."""
    from privbandits.deploy.vertical.party import _load_active, _save_active, learner_rng, make_learner

    protocol, rng = spec.protocol, np.random.default_rng(0)
    learner, arms = make_learner(protocol, learner_rng(spec, "active")), []
    for _ in range(25):
        contexts = rng.normal(size=(protocol.n_arms, protocol.dim)) / 3
        arms.append(learner.select(contexts))
        learner.update(contexts, arms[-1], float(rng.random()))
    log = checkpoint.decision_log(spec, "active")
    log.start()
    _save_active(spec, "active", learner, arms, log)
    fresh = make_learner(protocol, learner_rng(spec, "active"))
    resumed = _load_active(spec, "active", fresh, checkpoint.decision_log(spec, "active"))
    contexts = rng.normal(size=(protocol.n_arms, protocol.dim)) / 3
    assert fresh.select(contexts) == learner.select(contexts)  # and it goes on as the original
    return {"learner": learner, "arms": arms}, {"learner": fresh, "arms": resumed}


def _mpc(spec: Deployment) -> tuple[dict, dict]:
    """A computing party's shares of W^-1 and b, their scale and its input generator, after the in-memory run."""
    from privbandits.deploy.mpc_bandit.party import config_of, private_seeds, save_state, saved_states
    from privbandits.mpc.sharing import ArithmeticShares
    from privbandits.protocols.mpc_bandit import PrivateEpsilonGreedy

    (_, _, learner), _ = honest_run("mpc-epsilon-greedy", "two parties")
    rng = np.random.default_rng(5)
    rng.random(7)

    def state(party, generator) -> dict:
        return {"inverse": party.inverse.shares, "b": party.b.shares, "scale": party.inverse.scale,
                "rounds": party.rounds, "rng": generator}  # fmt: skip

    arrays = {"inverse": learner.inverse.shares, "b": learner.b.shares}
    save_state(spec, "c0", learner.rounds, arrays, {"scale": learner.inverse.scale, "rng": rng.bit_generator.state})
    fresh = PrivateEpsilonGreedy(config_of(spec), seeds=private_seeds(spec), parties=spec.names("computing"),
                                 network=InMemoryNetwork())  # fmt: skip
    (done, (got, meta)), = saved_states(spec, "c0").items()  # fmt: skip
    fresh.inverse = ArithmeticShares(got["inverse"], meta["scale"], fresh.engine.leads)
    fresh.b = ArithmeticShares(got["b"], meta["scale"], fresh.engine.leads)
    fresh.rounds, generator = done, np.random.default_rng()
    generator.bit_generator.state = meta["rng"]
    return state(learner, rng), state(fresh, generator)


def _p2b(spec: Deployment) -> tuple[dict, dict]:
    """The shuffler's report-id key, its batch id and each batch it released (with its details, ledger rows and
    refusals), after the in-memory run."""
    from privbandits.deploy.p2b.messages import SealedBatch
    from privbandits.deploy.p2b.rejoin import restore_shuffler, save_shuffler
    from privbandits.deploy.p2b.sealing import new_private_key, public_key, seal
    from privbandits.protocols.p2b.core import EncodedBatch, RawBatch

    (out, _), network = honest_run("p2b", "one_hot")
    batches = {e.message.kind: e.message for e in network.transcript if e.receiver == "server"}
    encoded, public = batches[EncodedBatch.kind], public_key(new_private_key())  # the deployed shuffler's is sealed
    rows = zip(encoded.codes.tolist(), encoded.actions.tolist(), encoded.rewards.tolist(), strict=True)
    sealed = SealedBatch(encoded.codes, np.stack([seal(public, *row) for row in rows]))
    releases = {
        "encoded": (sealed, out.release, out.ledgers["shuffler"].rows(), 2),
        "raw": (batches[RawBatch.kind], {"received": out.raw_tuples_shared}, out.ledgers["raw_shuffler"].rows(), 0),
    }
    key, batch_id = bytes(range(32)), 3
    save_shuffler(spec, "shuffler", key, batch_id, releases)
    got_key, got_id, got = restore_shuffler(spec, "shuffler")
    return ({"key": key.hex(), "batch": batch_id, "releases": _plain(releases)},
            {"key": got_key.hex(), "batch": got_id, "releases": _plain(got)})  # fmt: skip


def _plain(releases: dict) -> dict:
    """Releases as JSON would hold their rows (tuples as lists)."""
    return {kind: (batch, details, json.loads(json.dumps(rows)), refused)
            for kind, (batch, details, rows, refused) in releases.items()}  # fmt: skip


def _fclub(spec: Deployment) -> tuple[dict, dict]:
    """A local server's and the (deployed) global server's declared state at the phase start that ends the run."""
    from privbandits.deploy.fclub import resume
    from privbandits.deploy.fclub.global_server import DeployedGlobal
    from privbandits.deploy.fclub.local_server import local_rng
    from privbandits.deploy.fclub.session import _calibration
    from privbandits.protocols.fclub import LocalServer

    out = run_in_memory("fclub", "cdp-fclub-dc", Recording(serialize=True))  # its own run: other tests of the
    bandit, t = out.bandit, spec.protocol.horizon  # process may have played on from the shared one's parties
    assert resume.is_phase_start(t)
    local = bandit.servers[0]

    def deployed_global():
        return DeployedGlobal(_network(), [s.name for s in bandit.servers], local.dim, _calibration(spec))

    glob = deployed_global()
    glob.restore({**bandit.global_server.state(), "lost": {}, "undelivered": 0, "uploads_digest": "ab12"})
    resume.save(spec, "local0", t, {"server": local}, _network())
    resume.save(spec, "global", t, {"glob": glob}, _network())
    rng = local_rng(spec, "local0")
    fresh_local = LocalServer("local0", _network(), local.users, local.dim, _calibration(spec), rng)
    fresh_global = deployed_global()
    resume.load(spec, "local0", t, _network()).restore({"server": fresh_local})
    resume.load(spec, "global", t, _network()).restore({"glob": fresh_global})
    return ({"local0": local.state(), "global": glob.state()},
            {"local0": fresh_local.state(), "global": fresh_global.state()})  # fmt: skip


def _network() -> InMemoryNetwork:
    """A party's network, with the counters of what it received that a checkpoint keeps (as a TLS network's)."""
    network = InMemoryNetwork()
    network.received = Traffic()
    return network


ROUND_TRIPS: dict[str, tuple[str, Callable[[Deployment], tuple[dict, dict]]]] = {
    "vertical-o3m": ("vfucb", _vertical),
    "mpc-epsilon-greedy": ("two parties", _mpc),
    "p2b": ("one_hot", _p2b),
    "fclub": ("cdp-fclub-dc", _fclub),
}
"""Each protocol's checkpoint round trip, on which quick deployment."""


@pytest.mark.parametrize("name", PROTOCOLS.names())
def test_a_checkpoint_written_at_a_round_boundary_loads_back_into_the_same_state(tmp_path, name):
    variant, round_trip = ROUND_TRIPS[name]
    spec = small_deployment(name, variant).model_copy(update={"output": tmp_path / "out"})
    saved, loaded = round_trip(spec)
    assert any(Path(tmp_path / "out" / "checkpoints").iterdir())  # written where the party writes it
    assert encoded(loaded) == encoded(saved)
    assert encoded(loaded) != encoded({key: None for key in saved})  # not vacuous: there is a state


def test_every_registered_protocol_has_a_checkpoint_round_trip():
    assert set(ROUND_TRIPS) == set(PROTOCOLS.names())
