"""Where a deployed party's randomness comes from: OS entropy by default, the file's seed when asked.

Every random choice a protocol's privacy rests on (P2B devices' coins and tie-breaks and the
shuffler's permutation, FCLUB local servers' privatizer noise, VFTS sampling at the active
party) is drawn from a generator this module hands out, in one of two modes of the deployment
file's top-level ``reproducible`` field:

* ``reproducible = false`` (the default, mode ``"os"``): each party seeds its generator with
  fresh 256-bit entropy from the operating system (:mod:`secrets`), per party and session. It is
  never written to a shared file: a party that must replay its draws on ``--resume`` keeps it in
  its own file ``OUTPUT/checkpoints/NAME.entropy.npz`` (mode 0600, beside its checkpoint).
* ``reproducible = true`` (mode ``"reproducible"``): each party derives its streams from the
  protocol's ``seed`` exactly as the in-memory run does, so the processes equal that run. Anyone
  holding the deployment file can recompute every party's draws (tests
  ``tests/deploy/test_deploy_attacks.py`` do): for tests and demos only. Every party warns on stderr
  (:func:`announce`) and its result records the mode (``"randomness"``, :func:`recorded`).

The vertical protocol's mask seed and secure-aggregation pair seeds and the MPC protocol's dealer
and share seeds do not come from here: they are drawn from OS entropy in every mode (by
``deploy data`` into each party's own data file, by the mask generator when it has none, and by
the passive parties at set-up).
"""

from __future__ import annotations

import functools
import secrets
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from privbandits.deploy import checkpoint
from privbandits.deploy.deployment import Deployment, DeploymentError

OS, REPRODUCIBLE = "os", "reproducible"
"""The modes, as each party's result records them (``"randomness"``)."""
WARNING = (
    "WARNING: reproducible = true: every party's random choices derive from the deployment file's seed; "
    "for tests and demos only: no privacy (anyone holding the file can recompute them)"
)
ENTROPY_BITS = 256


def mode(deployment: Deployment) -> str:
    """``"reproducible"`` or ``"os"``: where the parties of ``deployment`` draw their secret randomness."""
    return REPRODUCIBLE if deployment.reproducible else OS


def entropy_path(deployment: Deployment, name: str) -> Path:
    """Party ``name``'s own file of its OS seed (only for a party that replays its draws on ``--resume``)."""
    return deployment.output / "checkpoints" / f"{name}.entropy.npz"


def seed_sequence(
    deployment: Deployment,
    name: str | None,
    reproducible: np.random.SeedSequence,
    *,
    keep: bool = False,
    resume: bool = False,
) -> np.random.SeedSequence:
    """Party ``name``'s root seed: ``reproducible`` (derived from the file's seed) in reproducible mode, else
    fresh OS entropy. ``keep``: save the OS seed in the party's own file (0600), and read it back when
    ``resume``, so a resumed party replays the same draws. ``name`` None: an in-memory run (nothing kept)."""
    if deployment.reproducible:
        return reproducible
    if not keep or name is None:
        return np.random.SeedSequence(secrets.randbits(ENTROPY_BITS))
    path = entropy_path(deployment, name)
    if resume:
        return np.random.SeedSequence(_read_seed(deployment, path))
    words = np.frombuffer(secrets.token_bytes(ENTROPY_BITS // 8), dtype=np.uint64).copy()
    checkpoint.save(path, {"entropy": words}, {"digest": deployment.protocol_digest()})
    return np.random.SeedSequence([int(word) for word in words])


def generator(deployment: Deployment, name: str | None, reproducible: np.random.SeedSequence) -> np.random.Generator:
    """A generator for party ``name`` (see :func:`seed_sequence`; nothing kept)."""
    return np.random.default_rng(seed_sequence(deployment, name, reproducible))


def _read_seed(deployment: Deployment, path: Path) -> list[int]:
    saved = checkpoint.load(path)
    if saved is None:
        raise DeploymentError(f"no entropy file at {path} to resume from (start the session afresh)")
    arrays, meta = saved
    if meta.get("digest") != deployment.protocol_digest():
        raise DeploymentError(f"{path} was written for another deployment (its digest differs)")
    return [int(word) for word in arrays["entropy"]]


def announce(deployment: Deployment) -> None:
    """Print :data:`WARNING` on stderr when the deployment is reproducible (nothing otherwise)."""
    if deployment.reproducible:
        print(WARNING, file=sys.stderr, flush=True)


def recorded(run_party: Callable[..., dict]) -> Callable[..., dict]:
    """Wrap a protocol's ``run_party``: warn at the start in reproducible mode, record the mode in the result."""

    @functools.wraps(run_party)
    def run(deployment: Deployment, name: str, *args, **kwargs) -> dict:
        announce(deployment)
        result = run_party(deployment, name, *args, **kwargs)
        result["randomness"] = mode(deployment)
        return result

    return run
