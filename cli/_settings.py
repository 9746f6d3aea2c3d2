"""A model's settings on the command line: ``--set NAME=VALUE`` (repeated), checked against the model's
configuration, and ``--settings``, which lists them.

Every setting a model has is a field of its configuration (a frozen
dataclass), so the command line takes them from there rather than from a
flag per setting: a new setting needs no new flag, and a name that is not a
field of the chosen model is refused with the names that are.  A value is
read by the type of the field's value in the preset: ``true``/``false`` for
a switch, ``1,2,3`` for a tuple of integers (``''`` for none), ``none`` where
the setting may be unset, a number or a word otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import inspect
import re

_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def add_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """``--set`` and ``--settings`` on ``p``; ``what`` names the model they change in the help."""
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="settings_given",
                   help=f"change one setting of {what} (repeat for several; --settings lists them)")
    p.add_argument("--settings", action="store_true", dest="list_settings",
                   help=f"list the settings of {what}, with their values, and exit")


def parse(given: list[str], preset) -> dict:
    """The settings ``--set`` gave, each read by the type of its value in ``preset`` (a configuration); a
    ValueError naming the first one that is not a setting of it, or whose value does not read."""
    fields = {f.name: f for f in dataclasses.fields(preset)}
    out: dict = {}
    for item in given:
        name, eq, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not eq or not name:
            raise ValueError(f"--set takes NAME=VALUE, got {item!r}")
        if name not in fields:
            near = difflib.get_close_matches(name, fields, n=3)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            raise ValueError(f"{name!r} is not a setting of {type(preset).__name__}{hint}: --settings lists them")
        out[name] = _read(name, text.strip(), getattr(preset, name), fields[name].type)
    return out


def _read(name: str, text: str, current, annotation):
    optional = "None" in str(annotation)
    if optional and text.lower() == "none":
        return None
    try:
        if isinstance(current, bool):
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise ValueError
        if isinstance(current, tuple):
            return tuple(int(part) for part in text.replace(" ", "").split(",") if part)
        if isinstance(current, int):
            return int(text)
        if isinstance(current, float) or "float" in str(annotation):
            return float(text)
        return text
    except ValueError:
        kind = ("true or false" if isinstance(current, bool) else "comma-separated integers"
                if isinstance(current, tuple) else type(current).__name__ if current is not None else "a number")
        raise ValueError(f"--set {name}: {text!r} is not {kind}") from None


def listing(preset, name: str) -> str:
    """The settings of ``preset`` (a configuration), one a line: the name, its value, and the field's comment
    where the configuration's source has one."""
    notes = _comments(type(preset))
    rows = [(f.name, _show(getattr(preset, f.name))) for f in dataclasses.fields(preset)]
    width, shown = max(len(n) for n, _ in rows), max(len(v) for _, v in rows)
    lines = [f"settings of {name} ({type(preset).__name__}); change one with --set NAME=VALUE:"]
    lines += [f"  {n:{width}s}  {v:{shown}s}  {notes.get(n, '')}".rstrip() for n, v in rows]
    return "\n".join(lines)


def _comments(kind: type) -> dict[str, str]:
    """Each field's comment on its line of the configuration's source, where it has one."""
    try:
        source = inspect.getsource(kind)
    except (OSError, TypeError):
        return {}
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^\s+(\w+):[^#\n]*#\s*(.*)$", source, re.M)}


def _show(value) -> str:
    if isinstance(value, tuple):
        return ",".join(map(str, value)) or "''"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "none" if value is None else str(value)
