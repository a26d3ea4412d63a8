"""P2B as separate party processes: device hosts, the trusted shuffler (and its front ends) and the server (spec
``p2b.md``).

Modules: :mod:`.section` (the deployment file's ``[protocol]`` section), :mod:`.party` (each party's code),
:mod:`.roles` (the protocol's parties as deployed), :mod:`.messages` (the messages a deployment adds),
:mod:`.data` (each device host's users and data file), :mod:`.front` (the shuffler's device front end),
:mod:`.scaleout` (front ends on other hosts sharing one PostgreSQL queue), :mod:`.rejoin` (one party restarted
while the others run), :mod:`.outcome` (the outcome from the result files, the in-memory run, and
``DEPLOYABLE``, what the registry runs), :mod:`.load` (a load generator) and :mod:`.attacks`.
"""

from __future__ import annotations

from privbandits.deploy.p2b.section import P2BProtocol

SECTION = P2BProtocol
"""The ``[protocol]`` section the deployment file's parser validates (light: no party code)."""
PARTY_CODE = "privbandits.deploy.p2b.outcome:DEPLOYABLE"
"""Where the party code is, imported the first time a party of the protocol runs."""
