"""privbandits: privacy-preserving contextual bandits.

Subpackages
-----------
linear
    Plaintext learners: ridge statistics, LinUCB, LinTS, ε-greedy; P2B's batched population.
envs
    Bandit problems: the papers' synthetic generators, classification→bandit, logged-data replay.
datasets
    Loaders for real and bundled data sets, and the local data cache.
privacy, mpc, comm, protocols
    Mechanisms and attacks, the secret-sharing engine, the message layer, the four systems.
audit
    Empirical privacy audits: measured lower bounds on ε beside each mechanism's claim.
experiments
    Specs, tasks, the results store, executors, reproductions and reports.
deploy
    Deployments: each party of a protocol in its own process over mutually authenticated TCP.

Modules: :mod:`~privbandits.validation` (the declarative checks at every public boundary),
:mod:`~privbandits.checkpointed` (the state a party object's checkpoint holds, declared by its class),
:mod:`~privbandits.api` and :mod:`~privbandits.cli` (the Python entry point and the ``privbandits``
command; ``data_cli`` its ``data`` group).

``privbandits.run(name_or_spec, **overrides)`` runs a reproduction or a config and returns
its stored results as a table, ``privbandits.report`` rebuilds a stored reproduction's report
(:mod:`privbandits.api`).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def run(*args: Any, **kwargs: Any):
    """Run a reproduction or config and return its results; see :func:`privbandits.api.run`."""
    from privbandits.api import run as _run

    return _run(*args, **kwargs)


def report(*args: Any, **kwargs: Any):
    """Rebuild a stored reproduction's report; see :func:`privbandits.api.report`."""
    from privbandits.api import report as _report

    return _report(*args, **kwargs)
