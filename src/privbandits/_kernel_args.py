"""Arrays handed to the numba kernels in one numba type each, so that a kernel compiles once per real input type.

numba types a read-only array differently from a writable one (``Array(..., readonly=True)``), so the same
kernel fed a user's read-only array (an environment's contexts, ``np.broadcast_to``, a memory map) and then
a writable one compiles twice: seconds per population kernel. Call sites pass their input arrays through
one of these two: :func:`read_only` for bulk inputs (a view, never a copy), :func:`writable` for small
per-round inputs (a writable array dispatches faster, and copying a few floats costs less than a view).
"""

from __future__ import annotations

import numpy as np


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (no copy): what bulk kernel inputs are always passed as."""
    view = array.view()
    view.flags.writeable = False
    return view


def writable(array: np.ndarray) -> np.ndarray:
    """``array`` itself if it is writable, else a copy: for small per-round kernel inputs."""
    return array if array.flags.writeable else array.copy()
