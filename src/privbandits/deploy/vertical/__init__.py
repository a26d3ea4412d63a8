"""Vertical O3M (VFUCB / VFTS) as separate party processes: the mask generator, the active party and the passive
parties (spec ``vertical-o3m.md``).

Modules: :mod:`.section` (the deployment file's ``[protocol]`` section: options and roles), :mod:`.party` (each
party's code, its data files, checkpoints and the in-memory run it must equal; ``DEPLOYABLE``, what the registry
runs), and, for ``privbandits serve``, :mod:`.serving` (each party's serving role) and :mod:`.links` (their
mutual-TLS links, made again after a failure).
"""

from __future__ import annotations

from privbandits.deploy.vertical.section import VerticalProtocol

SECTION = VerticalProtocol
"""The ``[protocol]`` section the deployment file's parser validates (light: no party code)."""
PARTY_CODE = "privbandits.deploy.vertical.party:DEPLOYABLE"
"""Where the party code is, imported the first time a party of the protocol runs."""
