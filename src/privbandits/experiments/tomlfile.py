"""Reading a TOML file with one-line errors that name it: invalid TOML, not text at all, a folder or unreadable."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any


def read_toml(path: str | Path, error: type[Exception], what: str = "") -> dict[str, Any]:
    """The table of the TOML file ``path``; ``error`` (naming the file, after ``what``, e.g. ``"deployment file "``) if
    it is a folder, cannot be read, is not UTF-8 text or not TOML. A missing file raises FileNotFoundError."""
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{what}{path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{what}{path} is not a TOML file: byte {exc.start} is not UTF-8 text ({exc.reason})") from None
    except IsADirectoryError:
        raise error(f"{what}{path} is a folder, not a TOML file") from None
    except PermissionError as exc:
        raise error(f"{what}{path} cannot be read ({exc.strerror})") from None
