"""FCLUB as separate party processes: the users, the local servers and the global server (spec ``fclub.md``).

Modules: :mod:`.section` (the deployment file's ``[protocol]`` section), :mod:`.party` (the messages between the
parties, their hooks, the in-memory run and ``DEPLOYABLE``, what the registry runs), :mod:`.users`,
:mod:`.local_server`, :mod:`.global_server` (each role's code), :mod:`.resume` (checkpoints and ``--resume``) and
:mod:`.attacks`.
"""

from __future__ import annotations

from privbandits.deploy.fclub.section import FCLUBProtocol

SECTION = FCLUBProtocol
"""The ``[protocol]`` section the deployment file's parser validates (light: no party code)."""
PARTY_CODE = "privbandits.deploy.fclub.party:DEPLOYABLE"
"""Where the party code is, imported the first time a party of the protocol runs."""
