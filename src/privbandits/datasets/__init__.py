"""Data set loaders; real data sets load from local files, bundled ones need nothing."""

from privbandits.datasets.criteo import CriteoLog, criteo_contexts, load_criteo
from privbandits.datasets.digits import LabelledData, load_digits_data, unit_normalise
from privbandits.datasets.logged import EventContexts, LoggedBanditData
from privbandits.datasets.obd import default_obd_path, load_obd, vertical_obd_contexts

__all__ = [
    "CriteoLog",
    "EventContexts",
    "LabelledData",
    "LoggedBanditData",
    "criteo_contexts",
    "default_obd_path",
    "load_criteo",
    "load_digits_data",
    "load_obd",
    "unit_normalise",
    "vertical_obd_contexts",
]
