"""The FCLUB paper (federated online clustering of bandits, spec ``fclub.md`` §6): Figs. 2, 3, 4 and Table 3.

Every unit is one run of one algorithm on one setting with one seed
(:func:`~privbandits.papers.fclub.runs.simulate`); all algorithms face the same
users, items and rewards for a given seed. Figs. 2 and 4 (and Fig. 3's default setting)
name identical units, so the store computes them once. Table 3 is one unit: every timing
in one process, the algorithms taking turns.
"""
