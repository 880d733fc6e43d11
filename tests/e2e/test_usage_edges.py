"""Usage errors said at the start in one line, and the small promises of
the commands (issue 40, item 8): a header or proxy that cannot work, a
config file that is not UTF-8, a proxy that does not answer, ``status``
into a pipe that closes, ``control`` that got no answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hostile import links, serve
from support import _cli_env, crawl_args, read_records, run_cli


def test_a_request_option_that_cannot_work_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    config = tmp_path / "bad.toml"
    config.write_bytes(b"max-depth = 3\n# caf\xe9 in Latin-1\n")
    for args, why in [
        (("--header", "X-Name: caf\u00e9 \u2615"), "--header 'X-Name': its value is not Latin-1"),
        (("--proxy", "http://:3128"), "--proxy http://:3128: not a proxy URL"),
        (("--proxy", "http://p.test:99999"), "not a proxy URL"),
        (("--proxy", "http://u:pw@p.test:port"), "--proxy http://u:***@p.test:port: not a proxy"),
        (("--config", str(config)), "not UTF-8 (byte 0xe9 at 19)"),
    ]:
        job = tmp_path / "job"
        proc = run_cli("crawl", "http://127.0.0.1:9/", "--job-dir", str(job), *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1 and why in proc.stderr, (args, proc.stderr)
        assert "pw" not in proc.stderr and not job.exists()


def test_an_unreachable_proxy_is_named_as_the_proxy(tmp_path: Path) -> None:
    with serve({"/": lambda h, n: links()}) as server:
        job = tmp_path / "job"
        proc = run_cli(
            *crawl_args(
                server.url + "/", job, "--proxy", "http://u:pw@127.0.0.1:9", "--retries", "0"
            )
        )
        assert server.log.hits == []
    [record] = read_records(job / "pages.jsonl")
    assert "proxy http://u:***@127.0.0.1:9 unreachable (connection refused)" in record["error"]
    assert "pw" not in proc.stderr + json.dumps(record)


def test_status_into_a_closed_pipe_and_control_without_an_answer(tmp_path: Path) -> None:
    job = tmp_path / "job"
    with serve({"/": lambda h, n: links()}) as server:
        assert run_cli(*crawl_args(server.url + "/", job)).returncode == 0
    reader = subprocess.Popen(
        [sys.executable, "-m", "mpcrawler", "status", str(job)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_cli_env(),
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()  # as `| head` that has read what it wanted
    stderr = reader.stderr.read().decode()
    assert reader.wait(30) == 0 and "Traceback" not in stderr, stderr
    # A crawl that seems to run (its lock names a live process) but never answers.
    (job / "lock").write_text(str(os.getpid()))
    proc = run_cli("control", str(job), "pause", "--wait", "0.3")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no answer within 0.3 s" in proc.stdout


def test_the_curl_downloader_without_pycurl_is_a_usage_error(tmp_path: Path) -> None:
    """--downloader curl where pycurl is not installed: exit 2, one line that
    says how to install it, nothing written."""
    job = tmp_path / "job"
    code = (
        "import sys; sys.modules['pycurl'] = None; from mpcrawler.cli import main; "
        f"sys.exit(main(['crawl', 'http://127.0.0.1:9/', '--downloader', 'curl', "
        f"'--job-dir', {str(job)!r}]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_cli_env(), timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "pip install 'mpcrawler[curl]'" in proc.stderr
    assert not job.exists()
