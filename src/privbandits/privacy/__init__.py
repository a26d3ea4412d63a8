"""Privacy mechanisms, accounting and audits.

masks
    Orthogonal masks of the O3M mechanism (vertical federated bandits).
"""
