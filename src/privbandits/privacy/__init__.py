"""Privacy mechanisms, audits and the alternatives they are compared with.

masks
    Orthogonal masks of the O3M mechanism (vertical federated bandits).
leakage
    What the active party learns from O3M messages: Gram leakage, known-plaintext
    mask recovery, subspace and ICA attacks, the secure-aggregation view.
alternatives
    The same round statistics computed with O3M, Paillier encryption and Gaussian
    DP noise (the paper's App. C.3 comparison).
encoding
    P2B's context encoder: the normalised q-precision grid, k-means codes, caching.
crowd_blending
    P2B's guarantee: ε(p) of pre-sampling + crowd-blending (Eq. 2), δ for a given Ω.
ledger
    The privacy ledger every protocol records its releases in.
calibration
    Gaussian σ by name (the papers' formulas or the analytic Gaussian) and PLD / RDP accounting.
tree_mechanism
    The binary tree mechanism of FCLUB's privatizer and joint-DP LinUCB.
factorization
    The square-root matrix factorization for continual release of prefix sums (joint-DP LinUCB's alternative to
    the tree: lower noise at equal (ε, δ)).
epsilon_greedy
    η = log(|A|/ε) of an opened ε-greedy action (MPC paper Theorem 1).
membership
    Membership inference against a bandit checkpoint (MPC paper §6.5, two metrics).
amplification
    Privacy amplification by shuffling: n local reports, shuffled, are centrally (ε, δ)-DP.
bounds
    The data bounds a DP guarantee assumes (‖x‖ ≤ 1, |y| ≤ 1), enforced, with a count of what was clipped.
laplace
    Exact discrete Laplace noise on the noise grid (Canonne, Kamath & Steinke 2020), for pure ε-DP releases.
bounded_sums
    Noisy sums of bounded per-record statistics (Laplace or Gaussian, the budget split by shares): the DP
    off-policy estimators' release.

The empirical audits of these mechanisms live in :mod:`privbandits.audit` (above the protocols
they run).
"""
