"""The options of ``crawl --help``'s "render" section.

Pages that need JavaScript: the browser and its limits. A group of
:class:`mpcrawler.settings.Settings` (``settings.rendering``), frozen: the
fields of one section of the option table, each written once with ``option()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .options import MIB, RENDER_BLOCKABLE, RENDER_MODES, option

__all__ = ["RenderOptions"]


@dataclass(frozen=True)
class RenderOptions:
    """Options: pages that need JavaScript: the browser and its limits."""

    render: str = option(
        "never",
        choices=RENDER_MODES,
        group="render",
        help="run pages' JavaScript in headless Chromium (Playwright) before reading them: "
        "never, always (every HTML page), or auto (only pages whose HTML looks like an "
        "application's empty shell); the browser's own requests go through the crawl's "
        "politeness, robots.txt, address rules and WARC (default %(default)s)",
    )
    browser_path: str | None = option(
        None,
        metavar="PATH",
        group="render",
        help="the Chromium or Chrome to render with (default: chromium, chromium-browser, "
        "google-chrome or google-chrome-stable on the PATH)",
    )
    render_block: str = option(
        "image,font,media",
        metavar="TYPES",
        group="render",
        help="the browser's requests not fetched, by resource type (comma-separated: "
        f"{', '.join(RENDER_BLOCKABLE)}; none); with --page-requisites nothing is blocked "
        "(default %(default)s)",
    )
    render_tabs: int = option(
        4,
        minimum=1,
        maximum=64,
        group="render",
        help="pages each worker's browser renders at once, each in a tab (default %(default)s)",
    )
    render_timeout: float = option(
        30.0,
        above=0,
        maximum=3600,
        group="render",
        help="seconds a page may take to render, its requests included; one that takes "
        "longer keeps what its HTML had, with render_error (default %(default)s)",
    )
    render_restart: int = option(
        100,
        minimum=1,
        maximum=1_000_000,
        group="render",
        help="start a new browser after this many renders (default %(default)s)",
    )
    render_memory: int = option(
        2048 * MIB,
        minimum=64 * MIB,
        size=True,
        group="render",
        help="start a new browser when its processes hold more memory than this, in "
        "bytes, with K, M or G (default 2G)",
    )
