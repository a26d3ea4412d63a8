"""The privacy–utility map (issue 16, item 2): every private system and the DP LinUCB baselines on shared problems.

``privbandits run privacy-map`` runs non-private LinUCB, O3M's VFUCB (with and without secure
aggregation), FCLUB's CDP-FCLUB-DC at its ε, the MPC learner at its per-round η, P2B at its
participation p and the three DP LinUCB baselines (joint DP also by the square-root factorization; shuffle DP
also at a batch that amplifies) over a grid of ε on each environment a system
can run on; every unit is a config run (the runner's one loop), so the map's points are the
runs a TOML config of the same environment and policy would make. Modules: ``options`` (what
can change), ``environments`` (the shared problems and their natural metric), ``systems`` (every
point a system offers, its ε and its privacy model), ``semantics`` (what each privacy model
protects, from whom, and the trust it needs), ``grid`` (the units), ``measures`` (utility, ms and
bytes per round of a stored run), ``summary`` (each point's runs over seeds and the ranking
within an ε), ``plots`` and ``report``.
"""
