"""Unauthenticated traffic does not stop a deployment: each of the four, flooded, decides as if undisturbed.

Right after the launcher binds the parties' listeners (before any party links up) and again mid-run, every
listening party gets 20 idle and 20 garbage connections (random bytes, a plaintext HTTP request, a TLS
ClientHello without a client certificate; :mod:`flood`), held open until the run ends. Every party must exit 0
and the run equal its in-memory twin; the first party (it accepts every other) names refused connections.
Mid-run only the P2B shuffler still listens (its devices' connections); the others' ports refuse.
"""

from __future__ import annotations

import pytest
from flood import Flood
from small_deployments import KINDS, assert_equals_in_memory, deployment, results, wait_mid_run

from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.local import start_parties, survivable, wait_parties
from privbandits.deploy.party import protocol_of

SHORTER = {"mpc": {"mpc_rounds": 50}}
"""The MPC session runs 40 rounds on after the mid-run flood starts (round 10): enough to be flooded mid-run."""


FLOODED = [pytest.param(kind, marks=pytest.mark.slow) if kind == "p2b" else kind for kind in KINDS]
"""P2B's is slow: its session is the longest of the four (3.4 to 6 s on 2 cores, a minute on busy ones, where it
has failed); the other three run in the default suite."""


@pytest.mark.parametrize("kind", FLOODED)
def test_idle_and_garbage_connections_during_setup_and_mid_run_change_nothing(tmp_path, encoder_cache, kind):
    spec = load_deployment(deployment(kind, tmp_path, **SHORTER.get(kind, {})))
    parties = start_parties(spec, tmp_path)
    addresses = list(load_deployment(tmp_path / "deployment.resolved.toml").addresses().values())
    floods = [Flood(addresses).start()]  # the listeners are bound; the parties are still starting
    try:
        floods[0].wait_opened()
        wait_mid_run(kind, spec, parties)
        floods.append(Flood(addresses).start())
        floods[1].wait_opened()
        codes = wait_parties(parties, spec.deadline_s, survivable=survivable(spec))
    finally:
        for flood in floods:
            flood.stop()
        for party in parties:
            if party.process.poll() is None:
                party.process.kill()
    assert codes == dict.fromkeys(spec.parties, 0), {party.name: party.last_error for party in parties}
    assert floods[0].opened == 40 * len(addresses)
    first = (protocol_of(spec).link_order(spec) or list(spec.parties))[0]  # the party that dials no one
    assert results(spec)[first]["refusals"], f"{first} accepts every other party: it saw the set-up flood"
    assert_equals_in_memory(kind, spec)
