"""Data set loaders; real data sets load from local files, bundled ones need nothing."""

from privbandits.datasets.digits import LabelledData, load_digits_data, unit_normalise

__all__ = ["LabelledData", "load_digits_data", "unit_normalise"]
