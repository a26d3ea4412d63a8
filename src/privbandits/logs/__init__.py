"""Logged bandit feedback in and out (issue 49): one validated form, :class:`LoggedFeedback`, read from and
written to Open Bandit Pipeline's ``BanditFeedback`` (a dict, or a ``.npz``), Vowpal Wabbit's DSJSON, the
Open Bandit Dataset sample, and a synthetic generator with known ground truth.

The exports load lazily (PEP 562), so the command line's ``privbandits logs`` starts without numpy.
"""

from __future__ import annotations

from privbandits._lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "LoggedFeedback": ".feedback",
        "from_bandit_feedback": ".obp",
        "load_log": ".files",
        "load_npz": ".obp",
        "obd_feedback": ".obd",
        "read_dsjson": ".dsjson",
        "save_log": ".files",
        "save_npz": ".obp",
        "synthetic_feedback": ".synthetic",
        "to_bandit_feedback": ".obp",
        "write_dsjson": ".dsjson",
    },
)
