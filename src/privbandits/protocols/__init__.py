"""The private protocols, each as parties exchanging messages plus a driver.

vertical
    Vertical federated LinUCB / LinTS with orthogonal masks (VFUCB, VFTS).
mpc_bandit
    The secure multi-party ε-greedy bandit (MPC paper Alg. 1) and its plaintext twin.
"""
