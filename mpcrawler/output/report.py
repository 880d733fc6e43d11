"""``python -m mpcrawler report DIR``: how a crawl went, as one HTML file.

Reads a job directory (``job.json``, the records, ``stats.json`` if there is
one) and writes ``DIR/report.html``: a self-contained page with inline SVG
charts, no script, no font and nothing else to fetch, so it opens offline.
It touches nothing else in the job directory, so it can run beside a live
crawl.  Pure functions turn records into figures (:func:`summarize`) and
figures into markup (:func:`render`).
"""

from __future__ import annotations

import heapq
import html
import json
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..web.urls import host_of
from .jobdir import JobDir, JobState
from .pipelines import JsonLinesPipeline

__all__ = ["Summary", "render", "summarize", "write_report"]

_BUCKETS = 60  # points of the pages-per-second line
_TOP = 10


@dataclass
class Summary:
    """The figures of a report."""

    pages: int = 0
    errors: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    error_kinds: Counter[str] = field(default_factory=Counter)
    depths: Counter[int] = field(default_factory=Counter)
    host_pages: Counter[str] = field(default_factory=Counter)
    host_errors: Counter[str] = field(default_factory=Counter)
    bytes_total: int = 0
    sizes: Counter[str] = field(default_factory=Counter)  # by size band
    elapsed_ms: list[float] = field(default_factory=list)  # sorted once summarized
    # (ms, record number, url, status), slowest first once summarized
    slowest: list[tuple[float, int, str, Any]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # fetched_at of each record
    changes: Counter[str] = field(default_factory=Counter)  # of the last pass (revisits)
    bytes_saved: int = 0  # by the last pass's 304s

    def percentile(self, p: float) -> float | None:
        if not self.elapsed_ms:
            return None
        return self.elapsed_ms[min(len(self.elapsed_ms) - 1, int(p / 100 * len(self.elapsed_ms)))]


_SIZE_BANDS = [
    (1 << 10, "< 1 KB"),
    (10 << 10, "1-10 KB"),
    (100 << 10, "10-100 KB"),
    (1 << 20, "0.1-1 MB"),
]


def _size_band(size: int) -> str:
    for limit, name in _SIZE_BANDS:
        if size < limit:
            return name
    return ">= 1 MB"


def summarize(records: Iterable[dict[str, Any]], pass_start: int = 0) -> Summary:
    """The report's figures from the records (any fields may be missing);
    the changes and bytes saved are those of the pass that begins at record
    number ``pass_start``."""
    summary = Summary()
    for record in records:
        if summary.pages >= pass_start:
            change, saved = record.get("change"), record.get("bytes_saved")
            if isinstance(change, str):
                summary.changes[change] += 1
            if isinstance(saved, int):
                summary.bytes_saved += saved
        summary.pages += 1
        status = record.get("status")
        summary.statuses["none" if status is None else str(status)] += 1
        url = str(record.get("url") or "")
        host = host_of(url) if "://" in url else "?"
        summary.host_pages[host] += 1
        if record.get("error"):
            summary.errors += 1
            kind = record.get("error_kind")
            summary.error_kinds[kind if isinstance(kind, str) and kind else "other"] += 1
            summary.host_errors[host] += 1
        depth = record.get("depth")
        if isinstance(depth, int):
            summary.depths[depth] += 1
        size = record.get("bytes")
        if isinstance(size, int) and size >= 0:
            summary.bytes_total += size
            summary.sizes[_size_band(size)] += 1
        elapsed = record.get("elapsed_ms")
        if isinstance(elapsed, int | float):
            summary.elapsed_ms.append(float(elapsed))
            entry = (float(elapsed), summary.pages, url, status)  # pages: a tie-breaker
            if len(summary.slowest) < _TOP:
                heapq.heappush(summary.slowest, entry)
            else:
                heapq.heappushpop(summary.slowest, entry)
        fetched = record.get("fetched_at")
        if isinstance(fetched, int | float):
            summary.times.append(float(fetched))
    summary.elapsed_ms.sort()
    summary.slowest.sort(reverse=True)
    return summary


# ----------------------------------------------------------------- charts
def _bar_chart(chart_id: str, title: str, items: list[tuple[str, float]]) -> str:
    """A horizontal bar chart, one bar an item."""
    if not items:
        return f'<p class="empty" id="{chart_id}">{html.escape(title)}: none</p>'
    row, label_w, bar_w = 22, 170, 420
    height = row * len(items) + 30
    top = max(value for _, value in items) or 1
    parts = [
        f'<svg id="{chart_id}" class="chart" role="img" width="{label_w + bar_w + 90}" '
        f'height="{height}" viewBox="0 0 {label_w + bar_w + 90} {height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{html.escape(title)}</title>',
        f'<text x="0" y="16" class="title">{html.escape(title)}</text>',
    ]
    for n, (label, value) in enumerate(items):
        y = 26 + n * row
        width = max(1.0, bar_w * value / top)
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{html.escape(label)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y}" width="{width:.1f}" height="{row - 6}"/>'
            f'<text x="{label_w + width + 6:.1f}" y="{y + 14}">{_number(value)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _rate_chart(times: list[float], run_starts: list[float]) -> str:
    """Pages per second over the crawl, the start of each run marked."""
    if len(times) < 2:
        return '<p class="empty" id="rate">pages per second: too few pages</p>'
    start, end = min(times), max(times)
    span = max(end - start, 1e-3)
    width_s = span / _BUCKETS
    counts = [0] * _BUCKETS
    for t in times:
        counts[min(_BUCKETS - 1, int((t - start) / width_s))] += 1
    rates = [c / width_s for c in counts]
    w, h, left, bottom = 600, 200, 50, 30
    top = max(rates) or 1
    points = " ".join(
        f"{left + w * (i + 0.5) / _BUCKETS:.1f},{h - bottom - (h - bottom - 10) * r / top:.1f}"
        for i, r in enumerate(rates)
    )
    parts = [
        f'<svg id="rate" class="chart" role="img" width="{w + left + 20}" height="{h}" '
        f'viewBox="0 0 {w + left + 20} {h}" xmlns="http://www.w3.org/2000/svg">'
        "<title>pages per second over the crawl</title>",
        f'<line class="axis" x1="{left}" y1="{h - bottom}" x2="{left + w}" y2="{h - bottom}"/>',
        f'<line class="axis" x1="{left}" y1="10" x2="{left}" y2="{h - bottom}"/>',
        f'<text x="{left - 6}" y="16" text-anchor="end">{top:.0f}/s</text>',
        f'<text x="{left}" y="{h - 10}">0 s</text>',
        f'<text x="{left + w}" y="{h - 10}" text-anchor="end">{span:.0f} s</text>',
        f'<polyline class="line" points="{points}"/>',
    ]
    for n, run_start in enumerate(run_starts[1:], start=2):
        if start <= run_start <= end:
            x = left + w * (run_start - start) / span
            parts.append(
                f'<line class="resume" x1="{x:.1f}" y1="10" x2="{x:.1f}" y2="{h - bottom}"/>'
                f'<text class="resume" x="{x + 3:.1f}" y="22">run {n}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def _table(table_id: str, headers: list[str] | None, rows: list[list[Any]]) -> str:
    if headers is None:
        body = "".join(
            f"<tr><th>{html.escape(str(row[0]))}</th>"
            + "".join(f"<td>{html.escape(str(c))}</td>" for c in row[1:])
            + "</tr>"
            for row in rows
        )
        return f'<table id="{table_id}"><tbody>{body}</tbody></table>'
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
.chart text{font:12px system-ui,sans-serif;fill:#333}.chart .title{font-weight:bold}
.bar{fill:#4a78b0}.line{fill:none;stroke:#4a78b0;stroke-width:2}.axis{stroke:#999}
.resume{stroke:#c0392b;stroke-dasharray:4 3;fill:#c0392b}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:left;font-size:13px}th{background:#f2f2f2}.grid{display:flex;flex-wrap:wrap;gap:24px}
.empty{color:#777}
"""


def render(summary: Summary, settings: dict[str, Any], job: JobState, title: str) -> str:
    """The report page."""
    percentiles = [(f"p{p}", summary.percentile(p)) for p in (50, 90, 99)]
    elapsed = [(name, value) for name, value in percentiles if value is not None]
    if summary.elapsed_ms:
        elapsed.append(("max", summary.elapsed_ms[-1]))
    runs = [
        [n, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))]
        for n, t in enumerate(job.run_starts, start=1)
    ]
    settings_rows = [[k, json.dumps(v)] for k, v in sorted(settings.items())]
    overview = [
        ["state", job.state],
        ["pages", summary.pages],
        ["errors", summary.errors],
        ["bytes", f"{summary.bytes_total:,}"],
        ["bytes saved (this pass's 304s)", f"{summary.bytes_saved:,}"],
        ["runs", job.runs],
        ["elapsed", f"{job.elapsed_s:,.1f} s"],
    ]
    depths = [(str(d), n) for d, n in sorted(summary.depths.items())]
    sizes = [(b, summary.sizes[b]) for b in _band_names() if summary.sizes[b]]
    top_hosts = [list(x) for x in summary.host_pages.most_common(_TOP)]
    error_hosts = [list(x) for x in summary.host_errors.most_common(_TOP)]
    slowest = [[f"{ms:,.1f}", url, status] for ms, _, url, status in summary.slowest]
    sections = [
        f"<h1>Crawl report: {html.escape(title)}</h1>",
        _table("overview", None, overview),
        "<h2>Pages per second</h2>",
        _rate_chart(summary.times, job.run_starts),
        '<div class="grid">',
        _bar_chart("statuses", "status codes", sorted(summary.statuses.items())),
        _bar_chart("changes", "changes (this pass)", summary.changes.most_common()),
        _bar_chart("errors", "errors by kind", summary.error_kinds.most_common()),
        _bar_chart("depths", "pages per depth", depths),
        _bar_chart("sizes", "pages by size", sizes),
        _bar_chart("download", "download time, ms", elapsed),
        "</div>",
        "<h2>Hosts</h2>",
        '<div class="grid">',
        _table("top-hosts", ["host", "pages"], top_hosts),
        _table("error-hosts", ["host", "errors"], error_hosts),
        "</div>",
        "<h2>Slowest pages</h2>",
        _table("slowest", ["ms", "url", "status"], slowest),
        "<h2>Runs</h2>",
        _table("runs", ["run", "started"], runs),
        "<h2>Settings</h2>",
        _table("settings", ["setting", "value"], settings_rows),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>mpcrawler report: {html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{''.join(sections)}</body></html>\n"
    )


def _band_names() -> list[str]:
    return [name for _, name in _SIZE_BANDS] + [">= 1 MB"]


def write_report(job_dir: str | Path) -> Path:
    """Write ``DIR/report.html`` from the job in ``job_dir``; its path."""
    job = JobDir(job_dir)
    settings, state = job.read()
    out = Path(settings.get("out") or Path(job_dir) / "pages.jsonl")
    summary = summarize(JsonLinesPipeline(out).records(), state.pass_start_pages)
    path = Path(job_dir) / "report.html"
    tmp = path.with_name("report.html.tmp")
    tmp.write_text(render(summary, settings, state, str(job_dir)), encoding="utf-8")
    tmp.replace(path)
    return path
