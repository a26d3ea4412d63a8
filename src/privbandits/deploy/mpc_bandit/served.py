"""The MPC deployment's serving roles, by party (the registry's entry: ``PartyFunctions.serving``): the dealer's
service, a computing party's feature holder, the environment's decider (:mod:`privbandits.deploy.mpc_bandit.serving`
says what each does). A module of its own so that the roles' modules, which share :mod:`.serving`'s links and
messages, are imported by nothing they import."""

from __future__ import annotations

from privbandits.deploy.deployment import Deployment
from privbandits.deploy.mpc_bandit.section import MPCProtocol
from privbandits.deploy.mpc_bandit.serving import DealerService
from privbandits.deploy.mpc_bandit.serving_computing import ComputingHolder
from privbandits.deploy.mpc_bandit.serving_environment import EnvironmentDecider
from privbandits.serve.role import ServedRole


def serving_role(deployment: Deployment[MPCProtocol], name: str) -> ServedRole | None:
    """Party ``name``'s serving role (built from its own files only)."""
    role = deployment.parties[name].role
    if role == "dealer":
        return DealerService(deployment, name)
    if role == "computing":
        return ComputingHolder(deployment, name)
    if role == "environment":
        return EnvironmentDecider(deployment, name)
    return None
