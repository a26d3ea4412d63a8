"""The private protocols, each as parties exchanging messages plus a driver.

vertical
    Vertical federated LinUCB / LinTS with orthogonal masks (VFUCB, VFTS).
"""
