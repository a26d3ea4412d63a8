"""Data set loaders; real data sets load from local files or the data cache, bundled ones need nothing.

The exports load lazily (PEP 562), so importing a light submodule such as
:mod:`privbandits.datasets.cache` (standard library only, used by the command line and by
option models) does not import numpy, scikit-learn or the other loaders.
"""

from __future__ import annotations

from privbandits._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "CriteoLog": ".criteo",
        "criteo_contexts": ".criteo",
        "load_criteo": ".criteo",
        "LabelledData": ".digits",
        "load_digits_data": ".digits",
        "unit_normalise": ".digits",
        "EventContexts": ".logged",
        "LoggedBanditData": ".logged",
        "default_obd_path": ".obd",
        "load_obd": ".obd",
        "vertical_obd_contexts": ".obd",
        "RatingLog": ".movielens100k",
        "load_movielens_100k": ".movielens100k",
        "fashion_mnist_bandit": ".mnist5k",
        "mnist5k_bandit": ".mnist5k",
    },
)
