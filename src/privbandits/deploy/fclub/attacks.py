"""An attack on an FCLUB deployment by its own global server, from what it holds: the file and the uploads it received.

Issue 28 measured it on deployments whose every party derived its randomness from the deployment file's ``seed``; it
is what ``reproducible = true`` still allows (by design: it is for tests and demos), and what the default, OS entropy
at each party (:mod:`privbandits.deploy.entropy`), defeats. ``tests/deploy/test_deploy_attacks.py`` asserts both.

:func:`fclub_noise_removal`: the FCLUB global server, holding the file and the phase uploads it received, regenerates
each local server's privatizer noise from the file's ``seed`` and subtracts it, recovering the raw cluster sums
(Σxxᵀ, Σrx).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privbandits.deploy.deployment import Deployment
from privbandits.deploy.fclub.section import FCLUBProtocol
from privbandits.deploy.fclub.session import _calibration, _streams, config_of
from privbandits.privacy.tree_mechanism import dyadic_cover, symmetric_gaussians


@dataclass(frozen=True)
class Recovered:
    """One phase upload with the noise the attacker found removed."""

    gram: np.ndarray
    """Σ xxᵀ of the cluster's members, as recovered."""
    moment: np.ndarray
    """Σ r x, as recovered."""
    residual: float
    """|trace(gram) − count|: 0 (to rounding) when the noise was found (contexts have unit norm)."""


def fclub_noise_removal(deployment: Deployment[FCLUBProtocol], uploads: list, *, pool: int = 4096) -> list[Recovered]:
    """The FCLUB global server's attack from the deployment file and the ``(sender, PhaseUpload)`` it received.

    It regenerates each local server's noise generator as reproducible mode derives it from the
    file and draws ``pool`` privatizer nodes from it with the project's public sampler, once for each
    tree depth's σ (the nodes are drawn in order, one 64-bit word per entry, whatever σ). The k-th
    phase upload of a local cluster is the k-th release of that cluster's phase-start tree: the sum
    of the nodes of k's dyadic cover, of which one is new and the others were found at earlier
    releases. For the new one it looks for the node (and the tree's depth, which fixes σ and the
    public shift) that leaves a Gram matrix of trace equal to the upload's count (every context
    has unit norm). Returns, per upload, the sums with the best candidate noise removed.
    """
    protocol, config = deployment.protocol, config_of(deployment)
    calibration = _calibration(deployment)
    depths = sorted({calibration.depth(t) for t in range(1, protocol.horizon + 1)})
    servers = deployment.names("local_server")
    nodes = {}  # (server, depth) -> the first ``pool`` nodes its privatizers draw at that depth's noise
    for depth in depths:
        generators = dict(zip(servers, _streams(deployment)[1], strict=True))
        for name in servers:
            rng, std = generators[name].spawn(2)[0], calibration.noise_std(depth)
            nodes[name, depth] = symmetric_gaussians(rng, pool, protocol.dim + 1, std)
    column = protocol.dim - 1 if config.reference_h_column else protocol.dim
    trees: dict[tuple[str, int], dict[int, tuple[int, int]]] = {}  # release -> (node index, depth)
    recovered = []
    for sender, msg in uploads:
        found = trees.setdefault((sender, msg.cluster), {})
        release = len(found) + 1
        earlier = [found[block << level][0] for level, block in dyadic_cover(release)[1:]]
        candidates = [found[1][1]] if found else depths
        ours = {depth: nodes[sender, depth] for depth in candidates}
        result, index, depth = _remove_noise(msg, ours, earlier, calibration, column)
        found[release] = (index, depth)
        recovered.append(result)
    return recovered


def _remove_noise(msg, nodes: dict[int, np.ndarray], earlier: list[int], calibration, column: int):
    """The upload with the noise of the best new node (and tree depth, a key of ``nodes``) removed:
    ``(Recovered, node, depth)``."""
    d = msg.gram.shape[0]
    best = (-math.inf, 0, next(iter(nodes)))
    for depth, drawn in nodes.items():
        traces = np.trace(drawn[:, :d, :d], axis1=1, axis2=2)
        shift = calibration.shifts(depth)[0]
        residual = np.abs(np.trace(msg.gram) - d * shift - (traces + float(traces[earlier].sum())) - msg.count)
        # each datum is snapped toward zero to the data grid g before it is summed, so the true node leaves a trace
        # below the count by less than count·d·g; of the nodes that close, the true one leaves a Gram matrix that
        # is PSD (a sum of snapped xxᵀ, each within g of a PSD one entrywise)
        close = np.flatnonzero(residual <= msg.count * d * calibration.data_grid + 1e-9)
        for k in close if close.size else [int(np.argmin(residual))]:
            gram = msg.gram - shift * np.eye(d) - drawn[[int(k), *earlier], :d, :d].sum(axis=0)
            smallest = float(np.linalg.eigvalsh(gram)[0]) - float(residual[k])
            if smallest > best[0]:
                best = (smallest, int(k), depth)
    _, k, depth = best
    noise = nodes[depth][[k, *earlier]].sum(axis=0)
    gram = msg.gram - calibration.shifts(depth)[0] * np.eye(d) - noise[:d, :d]
    moment = msg.moment - noise[:d, column]
    return Recovered(gram, moment, abs(float(np.trace(gram)) - msg.count)), k, depth
