"""``python -m mpcrawler ARGS`` as a real process, started warm.

The suite runs the CLI some 600 times, and each run's interpreter spent
about 0.17 s of CPU importing the master's modules before it did anything:
on 2 cores, a tenth of the suite's time.  This module owns a process per
test process that has imported them once (the *warm interpreter*) and
forks a child for each run, which then does what ``python -m`` does:
its own arguments, environment, working directory and standard streams,
``mpcrawler/__main__.py`` run as ``__main__``, and the interpreter's exit
(non-daemon threads joined, ``atexit`` run, streams flushed).  The child
starts its own forkserver and workers, as any crawl does; multiprocessing
starts the forkserver and its resource tracker as ``python -c CODE``, and a
run forks them instead (``_fork_helper``): they run the same CODE with only
the descriptors passed, and the worker modules already imported.  A crawl
of 30 pages cost 0.76 s of CPU cold, 0.22 s warm.

Data flow, one run (``run``)::

    test process                 warm interpreter           run (forked)
    ------------                 ----------------           ------------
    connect, send fds 0/1/2  ->  accept, fork a keeper
    + {argv, env, cwd}           keeper: fork the run  ->   dup2 fds, env, cwd,
    <- {"pid": run}                                         reseed, run __main__,
    read stdout/stderr to EOF                               exit as Python does
    <- {"status": waitpid's}  <- keeper: waitpid(run)

What a fresh interpreter reads at its start (``PYTHON*`` variables, the
locale) cannot change in a fork: a run whose environment differs there from
the warm interpreter's is started cold (``support.run_cli`` decides, with
``warm_enough``).  ``MPCRAWLER_COLD_CLI=1`` starts every run cold.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.util import spawnv_passfds as _spawnv_passfds
from pathlib import Path
from typing import Any

# What a crawl's master imports (its CLI, the engine, the local frontier,
# the outputs); the rest it imports itself, as a cold start would.
PRELOAD = (
    "mpcrawler.cli",
    "mpcrawler.cli.crawl",
    "mpcrawler.master.crawler",
    "mpcrawler.master.assemble",
    "mpcrawler.master.pool",
    "mpcrawler.frontier.local",
    "mpcrawler.output.sinks",
)
# What its forkserver preloads for the workers (``master.forkserver.preload``): a
# forkserver forked from the run has them already.
WORKER_PRELOAD = ("mpcrawler.worker.process", "mpcrawler.worker.http", "mpcrawler.worker.curl")
# The helper processes multiprocessing starts as ``python -c CODE``: a run
# forks them instead, and runs CODE (``_fork_helper``).
HELPERS = (
    "from multiprocessing.forkserver import main",
    "from multiprocessing.resource_tracker import main",
)
# Modules that read the environment when imported: imported again in each run.
READ_ENVIRONMENT_ON_IMPORT = ("mpcrawler.testing.faults",)
# What a fresh interpreter reads at its start, besides PYTHON*.
START_VARIABLES = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE")


def warm_enough(env: Mapping[str, str], base: Mapping[str, str]) -> bool:
    """A run with ``env`` behaves in a fork of an interpreter started with
    ``base`` as in its own: they agree on what an interpreter reads at start."""

    def start(variables: Mapping[str, str]) -> dict[str, str]:
        return {
            k: v for k, v in variables.items() if k.startswith("PYTHON") or k in START_VARIABLES
        }

    return start(env) == start(base)


# --- the warm interpreter ---------------------------------------------------


def serve(address: str, parent: int) -> None:
    """Import ``PRELOAD``, then answer runs on the Unix socket ``address``
    until the process ``parent`` (the test process) is gone."""
    for name in PRELOAD:
        importlib.import_module(name)
    for name in WORKER_PRELOAD:
        with contextlib.suppress(ImportError):  # pycurl is optional
            importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    listener.settimeout(1.0)
    print("ready", flush=True)
    try:
        while os.getppid() == parent:
            with contextlib.suppress(ChildProcessError):
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass  # keepers that are done
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            if os.fork() == 0:
                listener.close()
                _keep(conn)  # never returns
            conn.close()
    finally:
        os.unlink(address)
        os.rmdir(os.path.dirname(address))


def _keep(conn: socket.socket) -> None:
    """In a keeper: receive one run, fork it, report its pid and its status."""
    try:
        conn.settimeout(None)
        message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            conn.close()
            _run(request, fds)  # never returns
        for fd in fds:
            os.close(fd)
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        status = os.waitpid(pid, 0)[1]
        conn.sendall(json.dumps({"status": status}).encode() + b"\n")
    finally:
        os._exit(0)


def _stream(fd: int, like: Any, line_buffering: bool) -> io.TextIOWrapper:
    """A standard stream on ``fd``, with the encoding of ``like`` (the warm
    interpreter's own, started as a cold run's is)."""
    raw = open(fd, "wb" if fd else "rb", closefd=False)  # noqa: SIM115 - for the run's life
    return io.TextIOWrapper(
        raw, encoding=like.encoding, errors=like.errors, line_buffering=line_buffering
    )


def _run(request: dict[str, Any], fds: list[int]) -> None:
    """In the run: become ``python -m mpcrawler ARGV``, then exit as it would."""
    import runpy

    code = 1
    try:
        code = _status_of(lambda: _become(request, fds))  # could not start: said on its stderr
        if code == 0:
            code = _finalize(_status_of(lambda: runpy._run_module_as_main("mpcrawler")))
    finally:
        if code < 0:  # died of a signal, as Python does on an unhandled SIGINT
            signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        os._exit(code)


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """Take the run's standard streams, directory, environment and arguments."""
    if request["session"]:
        os.setsid()
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = sys.__stdin__ = _stream(0, sys.__stdin__, False)
    sys.stdout = sys.__stdout__ = _stream(1, sys.__stdout__, False)
    # Python 3.9+: a stderr that is not a terminal is line-buffered too.
    sys.stderr = sys.__stderr__ = _stream(2, sys.__stderr__, True)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = os.getcwd()  # as ``-m`` sets it
    _fresh_state()
    sys.argv = ["-m", *request["argv"]]


def _fork_helper(path: str, args: Sequence[str], passfds: Sequence[int]) -> int:
    """``multiprocessing.util.spawnv_passfds`` in a run: the forkserver and the
    resource tracker, which multiprocessing starts as ``python -c CODE`` with
    ``passfds`` open, are forked and run CODE, as fresh ones would; anything
    else is spawned as it would be.  The pid."""
    code = args[-1] if len(args) > 2 and args[-2] == "-c" else ""
    if not code.startswith(HELPERS):
        return _spawnv_passfds(path, args, passfds)
    for stream in (sys.stdout, sys.stderr):  # what the run wrote is not the helper's
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        # As exec would: only the descriptors passed stay open.  The run's
        # objects are never collected here (gc.freeze): one that closed its
        # descriptor on collection could close another's that took its number.
        import gc

        gc.freeze()
        keep = {0, 1, 2, *map(int, passfds)}
        for name in os.listdir("/proc/self/fd"):
            if int(name) not in keep:
                with contextlib.suppress(OSError):
                    os.close(int(name))
        sys.argv = ["-c"]
        status = _status_of(lambda: exec(code, {"__name__": "__main__"}))
    finally:
        os._exit(status)


def _fresh_state() -> None:
    """What each interpreter has of its own, that a fork would share: the
    random generator's seed, multiprocessing's authentication key, and the
    modules that read the environment when imported."""
    import multiprocessing
    import multiprocessing.util
    import random

    random.seed()
    multiprocessing.current_process().authkey = os.urandom(32)
    multiprocessing.util.spawnv_passfds = _fork_helper
    for name in READ_ENVIRONMENT_ON_IMPORT:
        if name in sys.modules:
            importlib.reload(sys.modules[name])


def _status_of(body: Callable[[], object]) -> int:
    """Run ``body``; the status the interpreter would exit with after it:
    0, ``sys.exit``'s, minus SIGINT's number for an unhandled
    KeyboardInterrupt, or 1 for any other exception (its traceback on
    stderr)."""
    try:
        body()
    except SystemExit as exit_:
        code = exit_.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code & 0xFF
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return -signal.SIGINT
    except BaseException:
        import traceback

        traceback.print_exc()
        return 1
    return 0


def _finalize(code: int) -> int:
    """The interpreter's exit: wait for non-daemon threads, run ``atexit``,
    flush the streams (a failed flush is exit status 120, as Python's)."""
    import atexit

    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120
    return code


# --- the test process's side ------------------------------------------------


class WarmCli:
    """The warm interpreter of this test process, started on first use."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._address = ""

    def _started(self) -> str:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                import tempfile

                folder = tempfile.mkdtemp(prefix="mpcrawler-warm-")
                self._address = str(Path(folder) / "socket")
                code = f"import warm_cli; warm_cli.serve({self._address!r}, {os.getpid()})"
                self._proc = subprocess.Popen(
                    [sys.executable, "-c", code],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    text=True,
                    env=self.env,
                )
                assert self._proc.stdout is not None
                line = self._proc.stdout.readline()
                assert line == "ready\n", f"the warm interpreter did not start: {line!r}"
            return self._address

    def start(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str, *, session: bool
    ) -> WarmProcess:
        """As ``subprocess.Popen([python, -m, mpcrawler, *argv], stdout=PIPE,
        stderr=PIPE, text=True, start_new_session=session, ...)``; a new
        session also has SIGHUP's default action (``support.start_cli``)."""
        address = self._started()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(address)
            request = {"argv": list(argv), "env": dict(env), "cwd": cwd, "session": session}
            with open(os.devnull, "rb") as stdin:
                fds = [stdin.fileno(), out_w, err_w]
                socket.send_fds(conn, [json.dumps(request).encode()], fds)
        except BaseException:
            for fd in (out_r, err_r):
                os.close(fd)
            conn.close()
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
        return WarmProcess([sys.executable, "-m", "mpcrawler", *argv], conn, out_r, err_r)

    def run(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str, timeout: float
    ) -> subprocess.CompletedProcess[str]:
        """As ``subprocess.run([python, -m, mpcrawler, *argv], capture_output=True,
        text=True, timeout=timeout, ...)``."""
        with self.start(argv, env, cwd, session=False) as proc:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        assert proc.returncode is not None
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


class WarmProcess:
    """A run, as the ``subprocess.Popen`` a cold start gives (text, stdout and
    stderr piped): its status comes from its keeper, which reaps it."""

    def __init__(self, args: list[str], conn: socket.socket, out_r: int, err_r: int) -> None:
        import locale

        self.args = args
        encoding = locale.getpreferredencoding(False)
        self.stdout = open(out_r, encoding=encoding)  # noqa: SIM115 - closed by communicate
        self.stderr = open(err_r, encoding=encoding)  # noqa: SIM115
        self.returncode: int | None = None
        self._conn = conn
        self._answers = conn.makefile("r")
        self.pid: int = json.loads(self._answers.readline())["pid"]
        self._ended = threading.Event()
        threading.Thread(target=self._await_status, daemon=True).start()
        self._texts: dict[str, str] = {}
        self._readers: list[threading.Thread] = []  # communicate's, once called

    def _await_status(self) -> None:
        try:
            line = self._answers.readline()
            status = json.loads(line)["status"] if line else 255 << 8  # keeper gone
            self.returncode = os.waitstatus_to_exitcode(status)
        finally:
            self._answers.close()
            self._conn.close()
            self._ended.set()

    def poll(self) -> int | None:
        return self.returncode if self._ended.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:  # as Popen: never a pid the run no longer has
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Both streams to their ends, then the status; as Popen's, the run
        goes on if ``timeout`` s pass first (and the call may be repeated)."""
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._readers:
            self._readers = [
                threading.Thread(target=self._read, args=(name,), daemon=True)
                for name in ("stdout", "stderr")
            ]
            for reader in self._readers:
                reader.start()
        for reader in self._readers:
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return self._texts["stdout"], self._texts["stderr"]

    def _read(self, name: str) -> None:
        stream = getattr(self, name)
        try:
            self._texts[name] = stream.read()
        except (OSError, ValueError):  # closed meanwhile
            self._texts[name] = ""
        finally:
            stream.close()

    def __enter__(self) -> WarmProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.wait()
        if not any(reader.is_alive() for reader in self._readers):
            for stream in (self.stdout, self.stderr):
                stream.close()
