"""Reading a TOML file with one-line errors that name it: invalid TOML, or not text at all."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any


def read_toml(path: str | Path, error: type[Exception]) -> dict[str, Any]:
    """The table of the TOML file ``path``; ``error`` (naming the file) if it is not UTF-8 text or not TOML."""
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path} is not a TOML file: byte {exc.start} is not UTF-8 text ({exc.reason})") from None
