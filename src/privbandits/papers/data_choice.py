"""The ``data`` option of reproductions that learn on images: which set ran, resolved when the options are parsed.

``auto`` becomes an MNIST IDX folder if one was given as ``mnist=``, else MNIST-5k if it is in the
data cache, else scikit-learn's digits (the stand-in), so the options a store remembers name the
data that ran. ``mnist`` reads the IDX folder given as ``mnist=``, else the data cache's full MNIST
(``privbandits data fetch mnist``: 60,000 training images, the paper's sweep). A cached set that is
missing, or an IDX folder given with another choice, is refused.
"""

from __future__ import annotations

from typing import Any

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
        raise ValueError(_NO_MNIST)
    if value != "mnist" and mnist_given:
        raise ValueError(f"mnist=<folder> is read only with data = 'mnist' or 'auto', not {value!r}")
    return value


_NO_MNIST = (
    "data = 'mnist' reads the IDX folder given as mnist=<folder>, or the data cache's MNIST: run "
    "`privbandits data fetch mnist` first"
)


def cached_mnist(values: Any) -> Any:
    """Raw options before validation: ``data = mnist`` without ``mnist=`` takes the data cache's MNIST folder
    (checked), so the options a store remembers name the folder that ran, as if it had been given."""
    if not isinstance(values, dict) or values.get("data") != "mnist" or values.get("mnist") is not None:
        return values
    from privbandits.datasets.cache import DataError, cached_folder, is_cached

    if not is_cached("mnist"):
        return values  # refused where data is resolved, naming the option
    try:
        return {**values, "mnist": str(cached_folder("mnist"))}
    except DataError as error:  # present but not the pinned files
        raise ValueError(str(error)) from None


def from_cache(folder: Any) -> bool:
    """Whether ``folder`` is the data cache's full-MNIST folder (what ``data = mnist`` alone reads)."""
    from pathlib import Path

    from privbandits.datasets.cache import folder as cache_folder

    return Path(folder).resolve() == cache_folder("mnist").resolve()


def shown_source(source: str) -> str:
    """A data set's description with the data cache's location written ``<data cache>``, not this machine's path."""
    from privbandits.datasets.cache import cache_dir

    return source.replace(str(cache_dir()), "<data cache>")
