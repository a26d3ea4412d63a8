"""A P2B deployment's outcome from its parties' result files, the in-memory run it must equal, and P2B's party code
as a deployable protocol (:data:`DEPLOYABLE`).

:func:`run_in_memory` is :func:`~privbandits.protocols.p2b.core.simulate` on the union of the device
hosts' data with the deployment's encoder, config and seed. With ``reproducible = true`` the
processes equal it (each party derives its streams from ``protocol.seed`` as ``simulate`` does);
with OS randomness (the default) it draws from a fresh 256-bit seed, as the processes do, and
equals them only in counts and shapes.

``simulate`` always plays the raw (non-private) baseline too. Its draws come from streams of
their own (0, 1, 2 and 4 of the nine; the private path uses 3, 5, 6, 7 and 8), so with
``raw_baseline = false`` the deployment's cold and warm-private late users, its encoded batch,
its private model and its ``share_encoded`` traffic still equal this run's, and its composed
ledger equals this run's without the ``p2b.raw_baseline`` entries (:func:`without_baseline`).
"""

from __future__ import annotations

import json
import math

import numpy as np

from privbandits.comm import InMemoryNetwork
from privbandits.deploy import entropy
from privbandits.deploy.deployment import Deployment
from privbandits.deploy.p2b import party as p2b
from privbandits.deploy.p2b import scaleout as p2b_scaleout
from privbandits.deploy.p2b.data import load_host, p2b_protocol
from privbandits.deploy.p2b.section import P2BProtocol
from privbandits.deploy.p2b.serving import serving_role
from privbandits.deploy.p2b.session import config_of, encoder_of
from privbandits.deploy.registry import PartyFunctions

SETTINGS = ("cold", "warm_non_private", "warm_private")
"""The late users' settings, as :class:`~privbandits.protocols.p2b.core.P2BOutcome`'s (the second only with the
raw baseline)."""


def setting_summary(mean_reward: list[float], known: list[int]) -> dict[str, float | int]:
    """Mean and std over late users of their mean reward (as :class:`~privbandits.protocols.p2b.core.SettingResult`)."""
    per_user = np.asarray(mean_reward, dtype=np.float64)
    measured = ~np.isnan(per_user)
    if not measured.any():
        return {"mean": math.nan, "std": math.nan, "n_users": 0, "rounds": 0}
    values = per_user[measured]
    return {
        "mean": float(values.mean()),
        "std": float(values.std()),
        "n_users": int(values.size),
        "rounds": int(np.asarray(known).sum()),
    }


def _device_ledger(results: dict, hosts: list[str]) -> list[dict]:
    """The device hosts' entries of one batch (same mechanism, same position) as one entry of all the devices:
    what they sent together is what the shuffler says it received in that batch."""
    devices: list[dict] = []
    for host in hosts:
        rows = results[host]["ledger"]
        if not devices:
            devices = [dict(row, details=dict(row["details"])) for row in rows]
            continue
        if [row["mechanism"] for row in rows] != [row["mechanism"] for row in devices]:
            raise ValueError(f"device host {host!r} recorded other batches than the first host")
        for total, row in zip(devices, rows, strict=True):
            total["details"]["sent"] += row["details"]["sent"]
    return devices


def outcome(deployment: Deployment[P2BProtocol]) -> dict:
    """The session's results from the parties' result files: late users per setting played (hosts in file
    order), the released batches, the published models, and the protocol's composed ledger."""
    from privbandits.privacy.ledger import PrivacyLedger
    from privbandits.protocols.p2b.core import compose_ledgers

    results = {name: json.loads(deployment.result_path(name).read_text()) for name in deployment.parties}
    hosts = deployment.names("device_host")
    late = {}
    for setting in (s for s in SETTINGS if s in results[hosts[0]]["late"]):
        means = [value for host in hosts for value in results[host]["late"][setting]["mean_reward"]]
        known = [value for host in hosts for value in results[host]["late"][setting]["known"]]
        late[setting] = setting_summary(means, known)
    ledgers = {}
    for name, rows in [("devices", _device_ledger(results, hosts))] + [
        (n, r["ledger"]) for n, r in results.items() if n not in hosts
    ]:
        ledgers[name] = ledger = PrivacyLedger()
        ledger.record_rows(rows)
    server = deployment.names("server")[0]
    return {
        "late": late,
        "batches": results[server]["batches"],  # the encoded one as the server opened it (the shuffler sees codes)
        "models": results[server]["models"],
        "ledger": compose_ledgers(ledgers),
        "results": results,
    }


def without_baseline(entries: list) -> list:
    """Ledger entries other than the raw baseline's (what a deployment with ``raw_baseline = false`` composes)."""
    from privbandits.protocols.p2b.core import RAW_BASELINE

    return [entry for entry in entries if entry.mechanism != RAW_BASELINE]


def run_in_memory(deployment: Deployment[P2BProtocol], network: InMemoryNetwork | None = None):
    """``simulate`` on the union of the device hosts' data (early users, then late, hosts in file
    order), with the deployment's encoder, config and seed (reproducible mode; else fresh OS entropy):
    ``(P2BOutcome, network)``."""
    from privbandits.datasets.interactions import UserInteractions
    from privbandits.protocols.p2b.core import simulate

    protocol = p2b_protocol(deployment)
    hosts = [load_host(deployment, name) for name in deployment.names("device_host")]
    contexts = np.concatenate([h.early.contexts for h in hosts] + [h.late.contexts for h in hosts])
    rewards = np.concatenate([h.early.rewards for h in hosts] + [h.late.rewards for h in hosts])
    data = UserInteractions(contexts, rewards, name="p2b-deployment", source="synthetic (the device hosts' files)")
    network = network if network is not None else InMemoryNetwork(record=True)
    seed = entropy.seed_sequence(deployment, None, np.random.SeedSequence(protocol.seed))
    result = simulate(data, encoder_of(protocol), config_of(protocol), seed, network=network)
    return result, network


DEPLOYABLE = PartyFunctions(
    P2BProtocol, (__name__, p2b.__name__), p2b.run_party, p2b.receive_deadline, data=p2b.write_synthetic_data,
    in_memory=run_in_memory, listening=p2b.keeps_listening, rejoining=p2b.rejoin, ordering=p2b.link_order,
    linked_peers=p2b_scaleout.linked_peers, serving=serving_role,
)  # fmt: skip
"""P2B's party code, :mod:`privbandits.deploy.p2b.party`'s functions (the registry loads it through the package's
``PARTY_CODE``; declared here, beside its in-memory run)."""
