"""The paper reproductions, one subpackage per paper (``vertical``, ``p2b``, ``fclub``, ``mpc``), and the
privacy–utility map across the systems (``privacy_map``); ``data_choice`` is the ``data`` option of the
reproductions that learn on images.

A layer on top of the library: it imports the library, the library never imports it. ``catalog.CATALOG``
names every reproduction; the library finds it through the entry point group ``privbandits.reproductions``
(``pyproject.toml``). Their units keep the store keys they had as ``privbandits.experiments.papers``
(:data:`privbandits.experiments.tasks.MOVED`).

Each subpackage keeps its options (``options.py``, light: the catalogue and ``show``
import it), one module per figure or table with ``tasks(options)`` (the grid) and
``report(options, points, out)`` (plots, tables and claims from stored results),
the functions its tasks call, and the paper's reported numbers apart.
"""
