"""The private multi-party ε-greedy contextual bandit (MPC paper Alg. 1, spec mpc-bandit §4) and its twin.

config
    :class:`MPCBanditConfig`, the learner's settings, and the contexts and rewards they accept.
rules
    The rules that tie the options together (shared with the experiment config and the deployment file).
exploration
    The dealer's exploration samples (:class:`ExplorationStream`), the words it deals, the parties' seeds.
choice
    Steps 3–4, the choice of a_t: private, with the exploration dealt, and in float64.
private
    :class:`PrivateEpsilonGreedy`, Alg. 1 on the MPC engine (in one process, or one computing party).
roles
    The parties outside P in their own processes: :class:`PullerRewarder` and the dealer (:class:`DealerRole`).
plaintext
    :class:`PlaintextEpsilonGreedy`, the float64 twin on the same exploration samples.
"""

from privbandits.protocols.mpc_bandit.choice import PACKED_KEY_BITS, dealt_choice, plaintext_choice, private_choice
from privbandits.protocols.mpc_bandit.config import MASK_ENCODINGS, MAX_PRECISION, MPCBanditConfig
from privbandits.protocols.mpc_bandit.exploration import (
    ExplorationDraw,
    ExplorationStream,
    PrivateSeeds,
    SeedLike,
    exploration_words,
)
from privbandits.protocols.mpc_bandit.plaintext import PlaintextEpsilonGreedy
from privbandits.protocols.mpc_bandit.private import CHECKPOINT, PrivateEpsilonGreedy, record_opening
from privbandits.protocols.mpc_bandit.roles import DealerRole, PullerRewarder, dealer_schedule
from privbandits.protocols.mpc_bandit.rules import (
    dealt_exploration_problem,
    lookup_comparison_problem,
    mask_factors_problem,
    overlap_problem,
)

__all__ = [
    "CHECKPOINT",
    "MASK_ENCODINGS",
    "MAX_PRECISION",
    "PACKED_KEY_BITS",
    "DealerRole",
    "ExplorationDraw",
    "ExplorationStream",
    "MPCBanditConfig",
    "PlaintextEpsilonGreedy",
    "PrivateEpsilonGreedy",
    "PrivateSeeds",
    "PullerRewarder",
    "SeedLike",
    "dealer_schedule",
    "dealt_choice",
    "dealt_exploration_problem",
    "exploration_words",
    "lookup_comparison_problem",
    "mask_factors_problem",
    "overlap_problem",
    "plaintext_choice",
    "private_choice",
    "record_opening",
]
