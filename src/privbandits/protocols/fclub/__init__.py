"""FCLUB: federated online clustering of bandits with cluster DP (spec ``fclub.md``).

Liu, Zhao, Yu, Li & Lui, UAI 2022. Parties and messages:

* :class:`LocalServer` ℓ holds its users' raw statistics ``(V_i, b_i, T_i)``,
  which never leave it, the user graph ``G^ℓ`` (edges deleted by Eq. 3; local
  clusters are its connected components) and, per local cluster, the
  synchronized copy ``(S, u, T)``, the upload buffer and the privatizers. At a
  phase start it sends one :class:`PhaseUpload` per local cluster (Alg. 2 line 5);
  in a round it sends an :class:`Upload` when Eq. 5 fires (Alg. 3).
* :class:`GlobalServer` merges local clusters into global clusters by Eq. 4
  (Alg. 2 line 7), keeps the global statistics and one download buffer per local
  cluster, pushes a :class:`Renewal` to every local cluster when the partition
  changes (lines 8–16) and a :class:`Download` when Eq. 6 fires (Alg. 4). It only
  ever sees these messages, which carry opaque cluster ids, sizes and privatized
  (or, in the non-private variants, shifted) cluster sums.
* :class:`FederatedClusteredBandit` wires them on one network and plays rounds.

The message boundary is the only one: a party reads nothing of another party's
objects, and no party shares a mutable object with another. What a party cannot
compute from its own state arrives as a message, so the same party code can run
alone in its own process:

* the global server learns how many phase uploads a server sends from the
  ``last`` flag of its last :class:`PhaseUpload` (the end of the server's batch);
* a local server learns whether renewals follow from the :class:`PhaseEnd` the
  global server sends every server after its merge (phase ``phase_end``);
* with ``rebuild_local_copies`` (asynchronous), the reference code's per-round
  Eq. 6 check is a :class:`DownloadCheck` from the arriving user's local cluster
  (phase ``check``), so the global server counts the idle downloads itself;
* each local server keeps its own privacy ledger of what it released and its own
  :class:`Repairs`; the global server keeps a ledger of the privatized uploads it
  received. :meth:`FederatedClusteredBandit.privacy_report`, ``ledger`` and
  ``repairs`` compose them.

The driver (:class:`FederatedClusteredBandit`) owns the clock and the users'
arrivals, calls each party's handlers in the order a deployment's event loops
would run them, and counts communication from what the parties report having
sent or received.

One communication round of the paper is one message between a local server and
the global server: phase uploads and asynchronous uploads count as uploads,
renewal pushes and asynchronous downloads as downloads (§8 A23). The control
messages above are traffic of their own phases (``phase_end``, ``check``), outside
the paper's count.

Trigger checks cost O(d²) per round: each local cluster keeps ``M⁻¹`` for
``M = S + ΔS`` and ``log det M`` up to date with Sherman–Morrison and the matrix
determinant lemma ``det(M + xxᵀ) = det(M)(1 + xᵀM⁻¹x)``; full factorizations
happen only at uploads, downloads and phase starts. Eq. 6 is evaluated by the
global server, which can compute ``S^ℓ_j = S^g − ΔS^{−ℓ}_j`` (§2.5) itself; its
value changes only when an upload reaches the global cluster, so it is checked
then (equivalent to checking every round).

Modules: :mod:`.local_server` (:class:`LocalServer`), :mod:`.global_server` (:class:`GlobalServer`),
:mod:`.driver` (:class:`FederatedClusteredBandit`, :func:`run_fclub`), :mod:`.rounds` (the round contract and
:func:`play`, shared with the local baselines of :mod:`.baselines`), :mod:`.accounting` (:class:`Communication`,
:class:`PrivacyReport`), :mod:`.numerics` (the absorb kernel, :class:`Repairs`), :mod:`.config` (the options),
:mod:`.messages` and :mod:`.reference` (the reference code's behaviours outside the paper's algorithm). Every name
that the single module ``protocols/fclub.py`` exported before it became this package (its options' and messages'
names included) is importable from here.
"""

from __future__ import annotations

from privbandits._lazy import lazy_exports

# Names load lazily (``privbandits.protocols.fclub.config`` imports no party code). The private names stay importable
# from here: checkpoints written before the split name their classes ``privbandits.protocols.fclub:_LocalCluster``
# (and so on), and tests import the two numerics helpers.
__all__, __getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "ASYNC": "privbandits.protocols.fclub.messages",
        "CHECK": "privbandits.protocols.fclub.messages",
        "Calibration": "privbandits.protocols.fclub.config",
        "Communication": "privbandits.protocols.fclub.accounting",
        "DETECT": "privbandits.protocols.fclub.messages",
        "Download": "privbandits.protocols.fclub.messages",
        "DownloadCheck": "privbandits.protocols.fclub.messages",
        "FCLUBConfig": "privbandits.protocols.fclub.config",
        "FCLUBOutcome": "privbandits.protocols.fclub.rounds",
        "FLOAT64": "privbandits.protocols.fclub.rounds",
        "FederatedClusteredBandit": "privbandits.protocols.fclub.driver",
        "GLOBAL": "privbandits.protocols.fclub.messages",
        "GlobalServer": "privbandits.protocols.fclub.global_server",
        "Lifecycle": "privbandits.protocols.fclub.config",
        "LocalServer": "privbandits.protocols.fclub.local_server",
        "MergeRule": "privbandits.protocols.fclub.config",
        "PDRepair": "privbandits.protocols.fclub.config",
        "PHASE_END": "privbandits.protocols.fclub.messages",
        "PRIVACY_UNIT": "privbandits.protocols.fclub.messages",
        "PhaseEnd": "privbandits.protocols.fclub.messages",
        "PhaseUpload": "privbandits.protocols.fclub.messages",
        "PrivacyReport": "privbandits.protocols.fclub.accounting",
        "Recommendation": "privbandits.protocols.fclub.config",
        "Renewal": "privbandits.protocols.fclub.messages",
        "Repairs": "privbandits.protocols.fclub.numerics",
        "RoundChecks": "privbandits.protocols.fclub.rounds",
        "Upload": "privbandits.protocols.fclub.messages",
        "_GlobalCluster": "privbandits.protocols.fclub.global_server",
        "_LocalCluster": "privbandits.protocols.fclub.local_server",
        "_Member": "privbandits.protocols.fclub.global_server",
        "_logdet": "privbandits.protocols.fclub.numerics",
        "_spd_inverse": "privbandits.protocols.fclub.numerics",
        "check_server_of_user": "privbandits.protocols.fclub.rounds",
        "play": "privbandits.protocols.fclub.rounds",
        "run_fclub": "privbandits.protocols.fclub.driver",
    },
)
