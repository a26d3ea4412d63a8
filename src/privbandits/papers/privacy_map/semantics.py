"""What each point's privacy notion means: protected whom, from whom, over what span, trusting whom.

One row per privacy model; every point of the map names its model, and the report's semantics
table is built from these rows (a test checks every point has one). The texts follow README
"Privacy" and the audits behind it (``privbandits run vertical-audit``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Semantics:
    """One privacy model: its notion and parameter, whom it protects from whom, span and trust."""

    notion: str
    parameter: str
    protects: str
    from_whom: str
    span: str
    trust: str


SEMANTICS: dict[str, Semantics] = {
    "none": Semantics(
        "none",
        "ε = ∞",
        "nobody",
        "—",
        "—",
        "trusted server (sees every context and reward)",
    ),
    "random": Semantics(
        "uses no data (uniform random arm)",
        "ε = 0",
        "everyone",
        "everyone",
        "whole run",
        "none",
    ),
    "o3m": Semantics(
        "O3M orthogonal masks (lossless; no ε)",
        "ε = ∞ (no DP); leaks geometry",
        "passive parties' feature values",
        "the active party",
        "whole run (one mask per party)",
        "non-colluding mask generator; the active party learns norms, inner products and span(Qʲ) of each "
        "passive party's vectors exactly and unmasks everything from d_j known pairs (vertical-audit)",
    ),
    "o3m_sa": Semantics(
        "O3M + secure aggregation (lossless; no ε)",
        "ε = ∞ (no DP); leaks the passive parties' joint geometry",
        "each passive party's feature values, and its own geometry",
        "the active party",
        "whole run",
        "non-colluding mask generator; pairwise seeds between passive parties; joint known pairs of all passive "
        "parties still recover [Q²…Qᴹ] (vertical-audit)",
    ),
    "fclub_none": Semantics(
        "none (FCLUB-DC uploads in the clear)",
        "ε = ∞",
        "nobody beyond the federation's split",
        "—",
        "—",
        "trusted local servers (raw interactions); global server sees exact cluster sums",
    ),
    "fclub_cdp": Semantics(
        "cluster-level (ε, δ)-DP per privatizer (Liu et al. 2022)",
        "ε, δ per local server's privatizer",
        "one datum of a local server's cluster statistics",
        "the global server and the other local servers",
        "whole run (tree mechanism over the continual release)",
        "trusted local server (sees its users' raw interactions)",
    ),
    "mpc_eta": Semantics(
        "η-DP of the opened action (MPC paper Thm. 1)",
        "η = log(|A|/ε) per round; T·η over the run",
        "the round's context",
        "the arm puller p′ (sees the opened arm); computing parties see only shares",
        "per round (composes to T·η)",
        "trusted dealer; non-colluding computing parties (semi-honest)",
    ),
    "p2b": Semantics(
        "pre-sampling + crowd-blending (P2B)",
        "ε = −ln(1 − p) per context vector; δ unknown",
        "each early user's one shared context vector",
        "the server (and anyone reading its data)",
        "whole run per user (one tuple; m tuples give mε)",
        "trusted shuffler (strips metadata, drops crowds < l)",
    ),
    "p2b_none": Semantics(
        "none (raw contexts shared)",
        "ε = ∞",
        "nobody",
        "—",
        "—",
        "trusted server (sees raw contexts, actions, rewards)",
    ),
    "p2b_cold": Semantics(
        "nothing shared (cold start)",
        "ε = 0",
        "everyone (no data leaves a device)",
        "everyone",
        "whole run",
        "none",
    ),
    "joint_dp": Semantics(
        "joint (ε, δ)-DP (Shariff & Sheffet 2018)",
        "ε, δ over the whole run",
        "each user's (context, reward)",
        "the other users (what they are shown)",
        "whole run (tree mechanism or square-root factorization on the Gram matrix)",
        "trusted server (sees raw contexts and rewards)",
    ),
    "local_dp": Semantics(
        "local (ε, δ)-DP (Zheng et al. 2020)",
        "ε, δ per user report",
        "each user's (context, reward)",
        "the server and everyone else",
        "per user (each user sends one report)",
        "none",
    ),
    "shuffle_dp": Semantics(
        "shuffle (ε, δ)-DP (Chowdhury & Zhou 2022)",
        "central ε, δ from amplification by shuffling (Feldman, McMillan & Talwar 2021, Thm 3.1)",
        "each user's (context, reward)",
        "the server",
        "whole run (batches of reports); batched local DP where a batch is too small to amplify",
        "trusted shuffler",
    ),
}
