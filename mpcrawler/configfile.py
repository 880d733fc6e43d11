"""Crawl options from a TOML file (``--config``), and back (``--print-config``).

A config file sets any crawl option by its setting name or its flag, with
dashes or underscores (``max-depth = 3``, ``reject_regex = ["/search"]``,
``header = ["X: 1"]``, ``no-robots = true``), plus ``seeds`` (a list of
URLs).  Values are TOML's own types; sizes and durations may be strings
as on the command line (``warc-size = "1G"``,
``revisit-after = "1d"``); a switch takes a boolean (``robots = false`` for
``--no-robots``).  The command line overrides the file, a repeatable option
as a whole.  ``to_toml`` writes effective settings in the same form, secrets
redacted, so its output is a valid config file.  Used by :mod:`mpcrawler.cli`;
no other component reads TOML.
"""

from __future__ import annotations

import argparse
import json
import math
import tomllib
from typing import Any

from .errors import UsageError
from .settings import OPTIONS, Settings

__all__ = ["apply_config", "load_config", "to_toml"]

_NOT_OPTIONS = frozenset({"config", "print_config"})


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in parser._actions if a.dest not in _NOT_OPTIONS | {"help"}}


def load_config(path: str, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The options ``path`` sets, by destination, converted as the command
    line converts them; UsageError (one line) for anything wrong."""
    try:
        with open(path, "rb") as file:
            data = tomllib.load(file)
    except OSError as exc:
        raise UsageError(f"--config {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"--config {path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8
        raise UsageError(
            f"--config {path}: not UTF-8 (byte {exc.object[exc.start]:#04x} at {exc.start})"
        ) from None
    actions = _actions(parser)
    by_flag = {
        flag.lstrip("-").replace("-", "_"): action
        for action in actions.values()
        for flag in action.option_strings
    }
    values: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        action = actions.get(name) or by_flag.get(name)
        if action is None:
            raise UsageError(f"--config {path}: unknown option {key!r}")
        converted = _convert(path, key, action, value)
        if name != action.dest and isinstance(action, argparse._StoreConstAction):
            converted = action.const if converted else action.default  # no-robots = true
        values[action.dest] = converted
    return values


def _convert(path: str, key: str, action: argparse.Action, value: Any) -> Any:
    where = f"--config {path}: {key}"
    if isinstance(action, argparse._StoreConstAction):  # a switch (store_true/false)
        if not isinstance(value, bool):
            raise UsageError(f"{where} must be true or false")
        return value  # the setting's own value: robots = false is --no-robots
    if isinstance(action, argparse._AppendAction) or action.nargs in ("*", "+"):
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
            raise UsageError(f"{where} must be a string or a list of strings")
        return list(items)
    if isinstance(value, bool | list | dict):
        raise UsageError(f"{where} must be a {'number' if action.type else 'string'}")
    if action.type is None and not isinstance(value, str):
        raise UsageError(f"{where} must be a string")
    if action.type is not None:
        try:
            value = action.type(str(value))
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise UsageError(f"{where}: {exc}") from None
    if action.choices is not None and value not in action.choices:
        raise UsageError(f"{where} must be one of {', '.join(map(str, action.choices))}")
    return value


def apply_config(
    argv: list[str], parser: argparse.ArgumentParser, sub: argparse.ArgumentParser, path: str
) -> argparse.Namespace:
    """Parse ``argv`` again with ``path``'s values as the defaults of the
    subcommand ``sub``: the command line wins, a repeatable option whole."""
    values = load_config(path, sub)
    lists = {k: v for k, v in values.items() if isinstance(v, list)}
    sub.set_defaults(**{k: v for k, v in values.items() if k not in lists})
    args = parser.parse_args(argv)
    for dest, items in lists.items():
        if not getattr(args, dest, None):
            setattr(args, dest, items)
    return args


def to_toml(settings: Settings) -> str:
    """The settings as a config file: every option (unset ones commented
    out), the seeds first, secrets as ``***``."""
    data = settings.to_dict()
    lines = ["# mpcrawler settings (--print-config); secrets are shown as ***"]
    lines.append(f"seeds = {_value(data['seeds'])}")
    for name in OPTIONS:
        value = data.get(name)
        key = name.replace("_", "-")
        if value is None:
            lines.append(f"# {key} =  (unset)")
        elif isinstance(value, float) and not math.isfinite(value):
            lines.append(f"# {key} = {value}")
        else:
            lines.append(f"{key} = {_value(value)}")
    return "\n".join(lines) + "\n"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(str(value))  # a TOML basic string: the same escapes
