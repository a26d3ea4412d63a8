"""Reproductions of the P2B paper (Malekzadeh et al., MLSys 2020; spec ``p2b.md`` §5): Fig. 3 to Fig. 7.

``options`` holds the typed options (light: the catalogue imports it), ``reference``
the paper's and the reference code's numbers, ``simulations`` the functions the tasks
run, ``common`` what several figures share (modes, verdicts, the three curves), and
``fig3`` … ``fig7`` each figure's grid and report.
"""
