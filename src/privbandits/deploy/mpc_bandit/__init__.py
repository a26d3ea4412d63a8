"""The private multi-party ε-greedy bandit (MPC paper Alg. 1) as separate party processes: the dealer, the computing
parties and the environment (spec ``mpc-bandit.md``).

Modules: :mod:`.section` (the deployment file's ``[protocol]`` section: options and roles) and :mod:`.party` (each
party's code, its data files, checkpoints and the in-memory run it must equal; ``DEPLOYABLE``, what the registry
runs).
"""

from __future__ import annotations

from privbandits.deploy.mpc_bandit.section import MPCProtocol

SECTION = MPCProtocol
"""The ``[protocol]`` section the deployment file's parser validates (light: no party code)."""
PARTY_CODE = "privbandits.deploy.mpc_bandit.party:DEPLOYABLE"
"""Where the party code is, imported the first time a party of the protocol runs."""
