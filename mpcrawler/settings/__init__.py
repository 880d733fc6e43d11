"""The settings of a crawl: :class:`Settings` and its option table.

- :mod:`.options`: how an option is declared and checked, and shared constants;
- ``*_options.py``: one section of the options each (``crawl --help``'s sections);
- :mod:`.crawl_settings`: ``Settings``, which holds them as its groups (``settings.politeness``),
  its checks and its plain-data form;
- :mod:`.worker`: ``WorkerConfig``, what a worker process uses of them.

A worker's process reads only ``WorkerConfig`` and a few constants of
:mod:`.options`: ``Settings`` and its option table are imported at the
first use of their names (``__getattr__``), so the workers' forkserver
does not import them (25 ms of each crawl's start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy
from .options import (
    BROAD_CRAWL_DEFAULTS,
    DEFAULT_USER_AGENT,
    HTML_TYPES,
    MAX_SLOTS,
    SCOPES,
    Option,
    check_redis_url,
    comma_list,
    option,
    out_of_bounds,
)

if TYPE_CHECKING:
    from .crawl_settings import (
        GROUP_OF,
        GROUPS,
        NUMBER_KINDS,
        OPTION_FIELDS,
        OPTION_HINTS,
        OPTIONS,
        SECRET_FIELDS,
        UPPER_BOUNDS,
        Settings,
        flag_of,
        setting_value,
    )

# The names of .crawl_settings, imported at their first use.
__getattr__ = lazy.attributes(
    globals(),
    dict.fromkeys(
        (
            "GROUP_OF",
            "GROUPS",
            "NUMBER_KINDS",
            "OPTION_FIELDS",
            "OPTION_HINTS",
            "OPTIONS",
            "SECRET_FIELDS",
            "UPPER_BOUNDS",
            "Settings",
            "flag_of",
            "setting_value",
        ),
        ".crawl_settings",
    ),
)

__all__ = [
    "BROAD_CRAWL_DEFAULTS",
    "DEFAULT_USER_AGENT",
    "GROUPS",
    "GROUP_OF",
    "HTML_TYPES",
    "MAX_SLOTS",
    "NUMBER_KINDS",
    "OPTIONS",
    "OPTION_FIELDS",
    "OPTION_HINTS",
    "SCOPES",
    "SECRET_FIELDS",
    "UPPER_BOUNDS",
    "Option",
    "Settings",
    "check_redis_url",
    "comma_list",
    "flag_of",
    "option",
    "out_of_bounds",
    "setting_value",
]
