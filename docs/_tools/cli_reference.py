"""The reference of every ``privbandits`` command, as Markdown, read from the Typer app at build time.

Each command gets a heading, its usage line, its help text and a table of its arguments and options (the
names, what they take, the default and the help), walking the command groups (``deploy``, ``party``,
``data``) in the order the app lists them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

# Typer builds its commands on its own copy of click (typer._click in recent versions), so commands and
# parameters are recognised by what they have, not by click's classes.
Command = Any


def _context(command: Command, path: list[str]) -> Any:
    return command.context_class(command, info_name=" ".join(path))


def _is_group(command: Command) -> bool:
    return hasattr(command, "list_commands")


def _root() -> Command:
    from privbandits.cli import app

    return typer.main.get_command(app)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _kind(param: Any) -> str:
    """What a parameter takes: Typer's annotation (recent Typer), else click's type name."""
    if getattr(param, "is_flag", False):
        return "flag"
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:
        annotation = descriptor.annotation
        return annotation.__name__ if isinstance(annotation, type) else str(annotation)
    return param.type.name.lower()


def _param_row(param: Any) -> str:
    names = ", ".join(f"`{name}`" for name in [*param.opts, *param.secondary_opts])
    if param.param_type_name == "argument":
        names = f"`{param.name.upper()}`"
    default = param.default
    shown = "" if default in (None, (), [], False) or callable(default) else f"`{default}`"
    if param.required:
        shown = "required"
    return f"| {names} | {_cell(_kind(param))} | {shown} | {_cell(getattr(param, 'help', None) or '')} |"


def _usage(command: Command, ctx: Any) -> list[str]:
    """The usage line's words after the command: [OPTIONS], each argument (NAME, [NAME], NAME...), COMMAND."""
    params = command.get_params(ctx)
    words = ["[OPTIONS]"] if any(p.param_type_name == "option" for p in params) else []
    for param in (p for p in params if p.param_type_name == "argument"):
        word = param.name.upper() + ("..." if param.nargs == -1 else "")
        words.append(word if param.required else f"[{word}]")
    return [*words, "COMMAND [ARGS]..."] if _is_group(command) else words


def _command(command: Command, path: list[str]) -> Iterator[str]:
    ctx = _context(command, path)
    level = "#" * min(len(path) + 1, 4)
    yield f"{level} `{' '.join(path)}`\n"
    yield f"```text\n{' '.join([*path, *_usage(command, ctx)])}\n```\n"
    if command.help:
        yield _cell(command.help) + "\n"
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False) and p.name != "help"]
    if params:
        yield "| argument or option | takes | default | what it does |\n|---|---|---|---|"
        yield "\n".join(_param_row(param) for param in params) + "\n"
    if _is_group(command):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _command(sub, [*path, name])


def commands() -> list[str]:
    """Every command path the reference covers, e.g. ``privbandits deploy local``."""
    found: list[str] = []

    def walk(command: Command, path: list[str]) -> None:
        found.append(" ".join(path))
        if _is_group(command):
            ctx = _context(command, path)
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), [*path, name])

    walk(_root(), ["privbandits"])
    return found


def cli_markdown() -> str:
    """The whole reference."""
    return "\n".join(_command(_root(), ["privbandits"]))
