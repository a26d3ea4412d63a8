"""A CLI runner whose results hold stdout and stderr apart on every click the declared bounds allow."""

from __future__ import annotations

from typer.testing import CliRunner


def separate() -> CliRunner:
    """``CliRunner`` with stderr apart: click before 8.2 mixes it into stdout unless told (``mix_stderr``), click
    8.2 and later always keep it apart (and take no such argument)."""
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()
