"""A small vertical O3M deployment (certificates and data made) and its check against the in-memory run: for the
vertical deployment's tests and those that run every protocol's (flood, stall, hosts).

Not a test module: ``tests/`` is on ``sys.path`` (pyproject.toml's ``[tool.pytest.ini_options] pythonpath``).
"""

from __future__ import annotations

import json
from pathlib import Path

from deploy_files import reproducible

from privbandits.deploy.certs import write_development_pki
from privbandits.deploy.deployment import load_deployment
from privbandits.deploy.vertical.party import in_memory_names, run_in_memory, write_synthetic_data

NAMES = ["mask_generator", "active", "passive2", "passive3"]
ROLES = {"mask_generator": "mask_generator", "active": "active", "passive2": "passive", "passive3": "passive"}


def make_deployment(
    folder: Path, *, lacking=None, deadline_s: float = 60.0, checkpoint_every: int = 100, seeded=True, **protocol
) -> Path:
    """A four-party deployment (M = 3 data holders, uneven blocks) with certificates and data; ``seeded``:
    reproducible (VFTS samples from the seed, as in memory)."""
    settings = {"policy": "vfucb", "partition": [5, 2, 3], "n_arms": 4, "rounds": 200, "seed": 7, **protocol}
    lines = [
        'name = "vertical-test"',
        'ca = "certs/ca.pem"',
        f"deadline_s = {deadline_s}",
        "connect_deadline_s = 30",
        f"checkpoint_every = {checkpoint_every}",
        "\n[protocol]",
        'name = "vertical-o3m"',
    ]
    lines += [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    for name in NAMES:
        lines += [
            f"\n[parties.{name}]",
            f'role = "{ROLES[name]}"',
            'address = "127.0.0.1:0"',
            f'certificate = "certs/{name}.pem"',
            f'key = "certs/{name}.key"',
        ]
        lines.append(f'data = "data/{name}.npz"')  # the mask generator's: its private mask seed
    path = folder / "deploy.toml"
    text = "\n".join(lines) + "\n"
    path.write_text(reproducible(text) if seeded else text)
    write_development_pki(folder / "certs", NAMES)
    write_synthetic_data(load_deployment(path), lacking=lacking)
    return path


def results(spec) -> dict[str, dict]:
    return {name: json.loads(spec.result_path(name).read_text()) for name in spec.parties}


def assert_same_as_in_memory(spec) -> None:
    got = results(spec)
    reference, network = run_in_memory(spec)
    assert got["active"]["arms"] == reference.arms.tolist()
    # every process's ledger holds the links it sends on; together, with the simulation's names, the in-memory
    # ledger. With prefetch, requests for several rounds share one round on their link, so a link's round count
    # is lower; messages and bytes are the same.
    # With chunk_requests, a request or answer link carries one message per top-up instead of one per round: the
    # bytes are the same.
    names = in_memory_names(spec)
    columns = 6 if spec.protocol.prefetch == 1 else 5
    keep = (lambda row: (*row[:3], row[4])) if spec.protocol.chunk_requests else (lambda row: row[:columns])
    rows = sorted(
        keep((phase, names[sender], names[receiver], messages, size, rounds))
        for result in got.values()
        for phase, sender, receiver, messages, size, rounds in result["traffic"]
    )
    assert rows == [keep(row) for row in network.traffic.rows()]
    # what each party received is what its peers sent
    sent = sorted(tuple(row[:5]) for result in got.values() for row in result["traffic"])
    received = sorted(tuple(row[:5]) for result in got.values() for row in result["received"])
    assert sent == received
    assert all(result["refusals"] == [] for result in got.values())
