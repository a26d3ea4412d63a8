"""Reproductions of the secure multi-party ε-greedy bandit paper (spec ``mpc-bandit.md`` §6): Fig. 2–9, Table 1.

Data (option ``data``, resolved when the options are parsed so the store remembers what ran):
real MNIST-5k from the data cache (``privbandits data fetch mnist5k``: 4,000 training rounds,
1,000 held out), Fashion-MNIST at the paper's scale (``data=fashion``: 60,000 rounds, 10,000
held out), full MNIST from a folder of its IDX files (``mnist=``), or the scikit-learn digits
STAND-IN (1,438 training rounds), which ``auto`` falls back to when MNIST-5k is not cached;
every report says which data ran. Figures that sweep many settings of
the *statistical* behaviour (Fig. 3, 6 and 7) run the plaintext twin, which shares
the private learner's exploration samples and is shown indistinguishable from it in
Fig. 2; Fig. 3 adds private runs at a few η as a check. Figures about the *secure
computation* (Fig. 2, 4, 5, 8, 9, Table 1) run the private learner.

Modules: :mod:`.options` (typed options, light), :mod:`.reference` (the paper's
numbers), :mod:`.sweeps` (the units that play learners on data: one learner run,
one membership-inference run), :mod:`.costs` (the timing units), :mod:`.common`
and :mod:`.plots` (shared report helpers), and one module per figure or table.
"""
