"""The ``data`` option of reproductions that learn on images: which set ran, resolved when the options are parsed.

``auto`` becomes an MNIST IDX folder if one was given as ``mnist=``, else MNIST-5k if it is in the
data cache, else scikit-learn's digits (the stand-in), so the options a store remembers name the
data that ran. A cached set that is missing, or an IDX folder given with another choice, is refused.
"""

from __future__ import annotations

CACHED = {"mnist5k": "mnist5k", "fashion": "fashion-mnist"}
"""Choices read from the data cache, and the cache's name for each."""


def resolve_data(value: str, mnist_given: bool) -> str:
    """The data set ``value`` stands for (``auto`` resolved), or ValueError saying what to do."""
    from privbandits.datasets.cache import fetch_command, is_cached  # standard library only

    if value == "auto":
        if mnist_given:
            return "mnist"
        return "mnist5k" if is_cached("mnist5k") else "digits"
    name = CACHED.get(value)
    if name is not None and not is_cached(name):
        raise ValueError(f"{name} is not in the data cache; run `{fetch_command(name)}` first")
    if value == "mnist" and not mnist_given:
        raise ValueError("data = 'mnist' needs the IDX folder as mnist=<folder>")
    if value != "mnist" and mnist_given:
        raise ValueError(f"mnist=<folder> is read only with data = 'mnist' or 'auto', not {value!r}")
    return value
