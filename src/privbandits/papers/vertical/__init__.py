"""Reproductions of the vertical O3M paper (Cao, Liang et al., KDD 2023; spec ``vertical-o3m.md``)."""
