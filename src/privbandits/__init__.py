"""privbandits: privacy-preserving contextual bandits.

Subpackages
-----------
linear
    Plaintext learners: ridge statistics, LinUCB, LinTS, ε-greedy.
envs
    Bandit problems: the papers' synthetic generators and classification→bandit.
datasets
    Loaders for real and bundled data sets.
experiments
    Config schema, runner, results store and reports.
"""

__version__ = "0.1.0"
