"""What every party of a deployed P2B session reads of the deployment: the protocol's configuration and encoder, each
party's random streams, and the session's batches (phases) and their names.
"""

from __future__ import annotations

import numpy as np

from privbandits.declared import P2BDeploymentOptions
from privbandits.deploy import entropy
from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.p2b.data import p2b_protocol as _protocol
from privbandits.deploy.p2b.section import P2BProtocol
from privbandits.protocols.p2b.core import P2BConfig  # at import (1.5 CPU-s): the zygote loads it once for every party

SHARE_RAW, SHARE_ENCODED = "share_raw", "share_encoded"
"""Phases, as in :func:`~privbandits.protocols.p2b.core.simulate`."""
COMMIT = "commit"
"""The phase of the hosts' commitments to their coins (before the first batch; not in the in-memory run)."""
N_STREAMS = 9
"""The random streams of :func:`~privbandits.protocols.p2b.core.simulate` (each party uses its own ones)."""


def config_of(protocol: P2BProtocol):
    """The :class:`~privbandits.protocols.p2b.core.P2BConfig` the deployment runs (no shared warm agent)."""
    return P2BConfig(**protocol.model_dump(include=set(P2BDeploymentOptions.model_fields)), shared_warm_agent=False)


def encoder_of(protocol: P2BProtocol):
    """The public k-means encoder (d, q, k, seed), from the on-disk cache or fitted."""
    from privbandits.privacy.encoding import load_or_fit_encoder

    try:
        return load_or_fit_encoder(protocol.dim, protocol.precision, protocol.n_codes, seed=protocol.encoder_seed)
    except ValueError as exc:
        raise DeploymentError(f"protocol: no encoder for dim, precision, n_codes: {exc}") from None


def root_of(deployment: Deployment[P2BProtocol], name: str, *, resume: bool = False) -> np.random.SeedSequence:
    """Party ``name``'s root seed: its OS seed, kept in its own entropy file for ``--resume``, or in reproducible
    mode ``protocol.seed``."""
    reproducible = np.random.SeedSequence(_protocol(deployment).seed)
    return entropy.seed_sequence(deployment, name, reproducible, keep=True, resume=resume)


def streams_of(deployment: Deployment[P2BProtocol], name: str, *, resume: bool = False,
               root: np.random.SeedSequence | None = None) -> list[np.random.Generator]:  # fmt: skip
    """Party ``name``'s nine streams of :func:`~privbandits.protocols.p2b.core.simulate` (it uses its own ones), from
    ``root`` (default: :func:`root_of`)."""
    root = root_of(deployment, name, resume=resume) if root is None else root
    return [np.random.default_rng(child) for child in root.spawn(N_STREAMS)]


def phases(protocol: P2BProtocol) -> tuple[str, ...]:
    """The session's batches, in order: the raw baseline's (only with ``raw_baseline``), then the encoded one."""
    return (SHARE_RAW, SHARE_ENCODED) if protocol.raw_baseline else (SHARE_ENCODED,)


KINDS = {SHARE_RAW: "raw", SHARE_ENCODED: "encoded"}
"""Each batch's name in the parties' results."""


BATCH_FIELDS = {"raw": ("contexts", "actions", "rewards"), "encoded": ("codes", "sealed")}
"""The arrays of each kind of batch the shuffler releases, in its class's field order (its saved batches; its result
keeps all but the sealed contents)."""
