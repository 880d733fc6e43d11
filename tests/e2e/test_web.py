"""``crawl --web-port`` and ``mpcrawler web``: the page of a running crawl,
driven in Debian's chromium through Playwright (issue 59), and its API's
safety seen from a client on loopback."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
from hostile import Handler, Reply, html, links, serve
from support import Lines, crawl_args, run_cli, start_cli

pytest.importorskip("aiohttp")
playwright = pytest.importorskip("playwright.sync_api")

A_PAGES = [f"/a{i}" for i in range(500)]
B_PAGES = [f"/b{i}" for i in range(1000)]
SERVING = re.compile(r" on (http://\S+)")
HOSTILE = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'


def wait_for(check: Callable[[], Any], timeout: float) -> Any:
    """Poll ``check`` every 20 ms for ``timeout`` seconds: its first true value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.02)
    return check()


def slow(handler: Handler, n: int) -> Reply:
    time.sleep(0.02)  # the server's own latency, so the crawl lasts
    return links()


def slower(handler: Handler, n: int) -> Reply:
    time.sleep(0.2)  # host B: it still has pages left when it is paused
    return links()


def web_url(output: Lines, timeout: float = 30.0) -> str:
    """The URL the web child says it serves on."""
    found = wait_for(
        lambda: next((m for line in output.out if (m := SERVING.search(line))), None), timeout
    )
    assert found, f"no web page: {output.out} {output.err}"
    return found.group(1)


@contextmanager
def browser() -> Iterator[Any]:
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: .ci/run installs Debian's package"
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def figure(page: Any, name: str) -> int:
    text = page.locator(f'dd[data-figure="{name}"]').text_content() or "0"
    return int(text.replace(",", "") or 0)


# Marks the figures and the first paused host's button as seen (a status
# makes the figures anew: a mark gone is a status shown).
MARK = """() => {
  document.getElementById('figures').dataset.seen = '1';
  document.querySelector('#paused-hosts button').dataset.seen = '1';
}"""
STILL_THERE = "() => document.querySelector('#paused-hosts button').dataset.seen === '1'"


def press(page: Any, name: str, answer: str) -> float:
    """Click the button ``name``; wait for the crawl's ``answer``; when it came."""
    page.get_by_role("button", name=name, exact=True).first.click()
    try:
        page.get_by_role("status").filter(has_text=answer).wait_for(timeout=10_000)
    except Exception:
        print("STATUS", page.get_by_role("status").text_content())
        raise
    return time.monotonic()


def test_the_page_shows_a_crawl_and_steers_it_across_a_kill(tmp_path: Path) -> None:
    job = tmp_path / "job"
    b_routes = {"/": lambda h, n: links(*B_PAGES)}
    with serve(b_routes, host="127.0.0.2", default=slower) as b_site:
        a_routes = {
            "/": lambda h, n: links("/hostile", b_site.url + "/", *A_PAGES),
            "/hostile": lambda h, n: html(f"<title>{HOSTILE}</title><p>hi</p>"),
        }
        with serve(a_routes, default=slow) as a_site:
            a_hits, b_hits = a_site.log.hits, b_site.log.hits
            args = crawl_args(
                a_site.url + "/", job, "--no-robots", "--allow-private-networks",
                "--workers", "1", "--web-port", "0",
            )  # fmt: skip
            args.insert(2, b_site.url + "/")  # a second seed: its host is in scope
            proc = start_cli(*args)
            output = Lines(proc)
            url = web_url(output)
            with browser() as chromium:
                page = chromium.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                page.goto(url)
                # The counters rise as the crawl goes.
                assert wait_for(lambda: figure(page, "pages") > 0, 20)
                first = figure(page, "pages")
                assert wait_for(lambda: figure(page, "pages") > first, 20)

                # Pause: nothing new starts (what was in flight began before).
                paused = press(page, "Pause", "pause: applied")
                assert not wait_for(
                    lambda: any(h.start > paused for h in [*a_hits, *b_hits]), 3.0
                ), "a request started after the pause was applied"
                page.locator(".state.paused").wait_for(timeout=5_000)
                resumed = press(page, "Resume", "resume: applied")
                assert wait_for(lambda: any(h.start > resumed for h in [*a_hits, *b_hits]), 10)

                # A delay out of bounds is refused with why; one within is applied.
                page.get_by_role("spinbutton", name="Delay (s)").fill("-1")
                press(page, "Set delay", "set: set delay: must not be negative")
                page.get_by_role("spinbutton", name="Delay (s)").fill("0.01")
                press(page, "Set delay", "set: applied")

                # Pause host B, from its name in the form.
                assert wait_for(lambda: len(b_hits) >= 3, 20), "host B was never reached"
                page.get_by_role("textbox", name="Host").fill("127.0.0.2")
                held = press(page, "Pause host", "pause-host: applied")
                assert not errors, errors
            # Killed, everything at once (master, workers, the page's server).
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            output.finish()
            b_before = len(b_hits)

            again = start_cli(*args)
            output = Lines(again)
            url = web_url(output)
            with browser() as chromium:
                page = chromium.new_page()
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                page.goto(url)
                # Host A is crawled to its end; B, paused across the kill, gets nothing.
                assert wait_for(lambda: {h.path for h in a_hits} >= {*A_PAGES, "/hostile"}, 90), (
                    "host A was not crawled to its end"
                )
                assert not any(h.start > held for h in b_hits), "a paused host was fetched"
                assert len(b_hits) == b_before
                paused_row = page.locator("#paused-hosts tbody td", has_text="127.0.0.2")
                paused_row.first.wait_for(timeout=10_000)
                # Host A is done: a title with markup in it is shown as text, and runs nothing.
                page.get_by_role("searchbox", name="Search").fill("pwned")
                page.get_by_role("button", name="Search", exact=True).click()
                shown = page.locator("#pages tbody td", has_text="window.pwned=1")
                shown.first.wait_for(timeout=20_000)
                assert shown.first.text_content() == HOSTILE
                assert page.evaluate("window.pwned") is None
                assert page.locator("#pages img").count() == 0

                # A new status leaves rows as they were in place, with their
                # buttons (the figures are made anew at each): a click that lands
                # between two statuses is not lost on a button made anew.
                page.evaluate(MARK)
                page.wait_for_function("() => !document.getElementById('figures').dataset.seen")
                assert page.evaluate(STILL_THERE), "the paused hosts' rows were made anew"
                # Its button resumes it.
                resumed = press(page, "Resume host", "resume-host: applied")
                assert wait_for(lambda: any(h.start > resumed for h in b_hits), 10)
                press(page, "Stop", "stop: applied")
                assert not errors, errors
            assert again.wait(timeout=60) == 130
            output.finish()
    status = json.loads(run_cli("status", str(job), "--json").stdout)
    assert "paused_hosts" not in status  # resumed: nothing held
    live = json.loads((job / "live.json").read_text())
    assert live["running"] is False and live["pages"] == status["pages"]


@pytest.fixture
def finished_job(tmp_path: Path) -> Iterator[Path]:
    job = tmp_path / "job"
    with serve({"/": lambda h, n: links("/x", "/y")}, default=lambda h, n: links()) as site:
        proc = run_cli(*crawl_args(site.url + "/", job))
        assert proc.returncode == 0, proc.stderr
    yield job


@contextmanager
def web(*args: str) -> Iterator[str]:
    proc = start_cli("web", *args, "--port", "0")
    output = Lines(proc)
    try:
        yield web_url(output)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, output.err
        output.finish()


def test_a_finished_job_is_shown_and_its_api_answers(finished_job: Path) -> None:
    with web(str(finished_job)) as url:
        status = requests.get(url + "api/status", timeout=10).json()
        assert status["pages"] == 3 and status["running"] is False
        assert status["state"] == "finished"
        pages = requests.get(url + "api/pages", params={"q": "/x"}, timeout=10).json()
        assert [p["url"].rsplit("/", 1)[1] for p in pages["pages"]] == ["x"]
        answer = requests.post(url + "api/control", json={"command": "pause"}, timeout=10)
        assert answer.json()["answer"].endswith("applied at its next start")
        stop = requests.post(url + "api/control", json={"command": "stop"}, timeout=10)
        assert stop.status_code == 400 and "not running" in stop.json()["error"]


def test_no_cross_site_request_acts_and_no_foreign_host_is_answered(finished_job: Path) -> None:
    inbox = finished_job / "control" / "inbox"
    with web(str(finished_job)) as url:
        for headers in (
            {"Origin": "http://evil.test"},
            {"Sec-Fetch-Site": "cross-site"},
        ):
            sent = requests.post(url + "api/control", json={"command": "pause"}, headers=headers)
            assert sent.status_code == 403
        form = requests.post(url + "api/control", data={"command": "pause"}, timeout=10)
        assert form.status_code == 403  # a form, not JSON: a cross-site form cannot act
        rebound = requests.get(url + "api/status", headers={"Host": "evil.test"}, timeout=10)
        assert rebound.status_code == 403
        page = requests.get(url, timeout=10)
        assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert not inbox.exists() or not list(inbox.iterdir())


def test_a_token_is_asked_of_every_request(finished_job: Path, tmp_path: Path) -> None:
    token = "t0ken-" + "x" * 20
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    with web(str(finished_job), "--token-file", str(token_file), "--bind", "0.0.0.0") as url:
        url = url.replace("0.0.0.0", "127.0.0.1")
        for path in ("", "static/app.js", "api/status", "api/pages"):
            assert requests.get(url + path, timeout=10).status_code == 401, path
        wrong = requests.get(url + "api/status", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        bearer = {"Authorization": f"Bearer {token}"}
        assert requests.get(url + "api/status", headers=bearer, timeout=10).json()["pages"] == 3
        basic = requests.get(url + "api/status", auth=("anyone", token), timeout=10)
        assert basic.status_code == 200
        sent = requests.post(url + "api/control", json={"command": "pause"}, timeout=10)
        assert sent.status_code == 401


def test_a_non_loopback_bind_needs_a_token(finished_job: Path, tmp_path: Path) -> None:
    for args in (
        ("web", str(finished_job), "--bind", "0.0.0.0"),
        ("crawl", "http://127.0.0.1:9/", "--job-dir", str(tmp_path / "j"), "--web-bind",
         "0.0.0.0", "--web-port", "0"),
    ):  # fmt: skip
        proc = run_cli(*args)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "needs a token" in proc.stderr
    assert not (tmp_path / "j").exists()


def test_a_crawls_page_serves_before_its_job_dir_exists(tmp_path: Path) -> None:
    """The child ``crawl --web-port`` starts may run before the crawl made
    its job dir: it serves (the state unknown yet), where ``web DIR`` of a
    missing directory is a usage error."""
    import socket
    import subprocess
    import sys

    missing = tmp_path / "not-yet"
    assert run_cli("web", str(missing), "--port", "0").returncode == 2
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "mpcrawler",
        "web",
        str(missing),
        "--fd",
        str(listener.fileno()),
    ]
    child = subprocess.Popen(
        command, pass_fds=(listener.fileno(),), stdout=subprocess.PIPE, text=True
    )
    listener.close()
    try:
        assert child.stdout is not None and " on http://" in child.stdout.readline()
        status = requests.get(f"http://127.0.0.1:{port}/api/status", timeout=10).json()
        assert status["running"] is False and status["pages"] == 0
    finally:
        child.terminate()
        assert child.wait(timeout=30) == 0
