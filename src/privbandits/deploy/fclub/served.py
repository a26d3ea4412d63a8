"""FCLUB's serving roles, by party (the registry's entry: ``PartyFunctions.serving``): a local server's decider, the
global server's role, and the users party refused (:mod:`privbandits.deploy.fclub.serving` says what each does). A
module of its own so that the roles' modules, which share :mod:`.serving`'s links and checks, are imported by nothing
they import."""

from __future__ import annotations

from privbandits.deploy.deployment import Deployment, DeploymentError
from privbandits.deploy.fclub.section import FCLUBProtocol
from privbandits.deploy.fclub.serve_global import ServedGlobalServer
from privbandits.deploy.fclub.serve_local import ServedLocalServer
from privbandits.serve.role import ServedRole


def serving_role(deployment: Deployment[FCLUBProtocol], name: str) -> ServedRole:
    """The served role of party ``name``: a local server's decider or the global server's role; the users party is
    refused in one line (the application takes its part)."""
    role = deployment.parties[name].role
    if role == "local_server":
        return ServedLocalServer(deployment, name)
    if role == "global_server":
        return ServedGlobalServer(deployment, name)
    servers = deployment.names("local_server")
    raise DeploymentError(
        f"--as {name!r}: the {role} party is not served: the application takes its part and asks the user's local "
        f"server ({', '.join(servers)}) for decisions; serve {FCLUBProtocol.GLOBAL!r} and every local server"
    )
