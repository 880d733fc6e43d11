"""A latency test site (a reproduction aid): N deterministic pages of about
SIZE bytes, each linking to FANOUT children and 3 pseudo-random pages; every
request waits LATENCY seconds with asyncio.sleep.

    python latency_site.py --pages 1000 --latency 0.05 --port 8800

GET /_stats returns {"count", "paths": {page: hits}, "log": [[host, page, start, end], ...]}.
Needs aiohttp.  Each page is built at its first request, in the server's
one event loop, and kept: a crawl of a fresh server pays that (about 1 ms of
CPU a page) on the server's side.

Source: the project's reproduction of the 4 x 4 slowdown (issue 27,
``shared/repro/latency_site.py``), kept here unchanged but for this note and
formatting so the layout benchmark needs nothing outside the repository.
"""

import argparse
import asyncio
import random
import time

from aiohttp import web

_TEXT = (
    "crawler frontier queue worker master process scheduler disk cache "
    "priority spill waiting finding request response parse link depth weight"
)
WORDS = _TEXT.split()


def make_page(i, n, fanout, size, host, hosts=1):
    rnd = random.Random(i)
    port = host.rsplit(":", 1)[1]
    links = [c for c in range(i * fanout + 1, i * fanout + fanout + 1) if c < n]
    links += [rnd.randrange(n) for _ in range(3)]
    parts = [
        f"<!doctype html><html><head><title>Page {i}</title>"
        f"<meta charset='utf-8'></head><body><h1>Page {i}</h1><ul>"
    ]
    for j, c in enumerate(links):
        # mix absolute, root-relative and relative forms
        if hosts > 1:
            href = f"http://127.0.0.{1 + c % hosts}:{port}/p/{c}"
        elif j % 3 == 0:
            href = f"http://{host}/p/{c}"
        elif j % 3 == 1:
            href = f"/p/{c}"
        else:
            href = f"../p/{c}"
        parts.append(f"<li><a href='{href}'>link {c}</a></li>")
    parts.append("</ul>")
    filler = []
    total = sum(len(p) for p in parts)
    while total < size:
        para = "<p>" + " ".join(rnd.choice(WORDS) for _ in range(60)) + "</p>\n"
        filler.append(para)
        total += len(para)
    parts.extend(filler)
    parts.append("</body></html>")
    return "".join(parts).encode()


def build_app(n, fanout, size, latency, host, hosts=1):
    cache = {}
    hits = {"count": 0, "paths": {}, "log": []}

    async def page(request):
        try:
            i = int(request.match_info["i"])
        except ValueError:
            raise web.HTTPNotFound() from None
        if not 0 <= i < n:
            raise web.HTTPNotFound() from None
        if (
            hosts > 1
            and request.headers.get("Host", "").split(":")[0] != f"127.0.0.{1 + i % hosts}"
        ):
            raise web.HTTPNotFound()  # each page lives on exactly one host
        t0 = time.time()
        if latency:
            await asyncio.sleep(latency)
        body = cache.get(i)
        if body is None:
            body = cache[i] = make_page(i, n, fanout, size, host, hosts)
        hits["count"] += 1
        hits["paths"][i] = hits["paths"].get(i, 0) + 1
        hits["log"].append(
            [request.headers.get("Host", "").split(":")[0], i, round(t0, 4), round(time.time(), 4)]
        )
        return web.Response(body=body, content_type="text/html", charset="utf-8")

    async def root(request):
        raise web.HTTPFound("/p/0")

    async def stats(request):
        return web.json_response(hits)

    async def robots(request):
        return web.Response(text="User-agent: *\nAllow: /\n")

    app = web.Application()
    app.router.add_get("/", root)
    app.router.add_get("/p/{i}", page)
    app.router.add_get("/_stats", stats)
    app.router.add_get("/robots.txt", robots)
    return app


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--fanout", type=int, default=5)
    ap.add_argument("--size", type=int, default=30000)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--port", type=int, default=8800)
    ap.add_argument(
        "--hosts",
        type=int,
        default=1,
        help="spread pages over 127.0.0.1..K (page i on 127.0.0.(1 + i %% K))",
    )
    a = ap.parse_args()
    host = f"127.0.0.1:{a.port}"
    binds = [f"127.0.0.{k}" for k in range(1, a.hosts + 1)]
    web.run_app(
        build_app(a.pages, a.fanout, a.size, a.latency, host, a.hosts),
        host=binds if a.hosts > 1 else "127.0.0.1",
        port=a.port,
        access_log=None,
        print=None,
    )


if __name__ == "__main__":
    main()
