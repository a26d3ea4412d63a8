"""Deployment files for the tests that compare processes with their in-memory run."""

from __future__ import annotations

import re


def reproducible(text: str) -> str:
    """The deployment file ``text`` with ``reproducible = true``: every party derives its randomness from the
    protocol's seed, as the in-memory run does (the default, OS entropy, makes every run differ)."""
    assert not re.search(r"^\s*reproducible\s*=", text, re.M), "the file sets reproducible already"
    return "reproducible = true\n" + text
