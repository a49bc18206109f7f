"""``accord serve --processes N``: one port, N server processes, and a supervisor over them.

The supervisor (the ``accord serve`` the operator started) binds the port and listens; then
it starts N children, each ``accord serve`` again with the same settings, handing them the
listening sockets (their descriptors in ``ACCORD_LISTEN_FDS``) and its own number
(``ACCORD_PROCESS``). Each child serves on the inherited sockets: the kernel gives every new
connection to one of them. The supervisor serves nothing itself. It

- forwards SIGINT and SIGTERM to the children as SIGTERM (each stops gracefully) and exits 0
  once they have; a second signal kills them (SIGKILL) and exits 1;
- starts a child that ended again, after the backoff of :mod:`accord.cli._process_policy`;
  a crash loop stops everything with exit status 3, and a child that exits 2 (its settings
  or agent refused: starting it again cannot help) stops everything with exit status 2;
- holds the write end of a pipe whose read end every child watches (``ACCORD_PARENT_FD``):
  when the supervisor dies, even by SIGKILL, the pipe ends and every child stops;
- makes a private directory (mode 0700, removed when it exits, or by its last child when it
  died without doing so) where the children answer each other's metrics scrapes
  (``ACCORD_METRICS_DIR``, :mod:`accord.server._node_metrics`): a scrape of ``/metrics``
  answered by any child answers for all of them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from types import FrameType

from accord.cli._process_policy import CRASH_EXITS, CRASH_WINDOW_S, Restarts
from accord.config import ConfigError

log = logging.getLogger("accord.processes")

LISTEN_FDS = "ACCORD_LISTEN_FDS"  # the listening sockets' descriptors, comma-separated
PROCESS = "ACCORD_PROCESS"  # this child's number, 1 to N
PARENT_FD = "ACCORD_PARENT_FD"  # the pipe that ends when the supervisor does
METRICS_DIR = "ACCORD_METRICS_DIR"  # where the children answer each other's scrapes
EXIT_REFUSED = 2  # a child's settings or agent refused: stop everything, exit 2
EXIT_CRASH_LOOP = 3
STOP_MARGIN_S = 30.0  # past the children's grace, the supervisor stops waiting: SIGKILL


@dataclass(frozen=True)
class Worker:
    """What a child of the supervisor inherited: its number, the listening sockets'
    descriptors, the descriptor of the pipe that ends with the supervisor, and the directory
    of the node's metrics sockets (None: not given, each process reports for itself)."""

    index: int
    fds: list[int]
    parent_fd: int
    metrics_dir: str | None = None


def worker_from_env(environ: MutableMapping[str, str] | None = None) -> Worker | None:
    """The :class:`Worker` this process is (its variables are taken out of ``environ``, so
    that a program it starts does not inherit them), or None: not a supervisor's child."""
    environ = os.environ if environ is None else environ
    if LISTEN_FDS not in environ:
        return None
    values = {name: environ.pop(name, "") for name in (LISTEN_FDS, PROCESS, PARENT_FD)}
    metrics_dir = environ.pop(METRICS_DIR, "") or None
    try:
        fds = [int(fd) for fd in values[LISTEN_FDS].split(",")]
        index, parent_fd = int(values[PROCESS]), int(values[PARENT_FD])
    except ValueError:
        raise ConfigError(
            f"{LISTEN_FDS}, {PROCESS} and {PARENT_FD} are set by accord serve --processes for "
            f"its children; got {values!r}"
        ) from None
    if index < 1 or parent_fd < 0 or not fds or min(fds) < 0:
        raise ConfigError(f"{LISTEN_FDS}, {PROCESS}, {PARENT_FD}: out of range: {values!r}")
    return Worker(index, fds, parent_fd, metrics_dir)


def watch_parent(fd: int) -> threading.Thread:
    """Stop this process (SIGTERM to itself: the server's graceful stop) once the pipe ``fd``
    ends, i.e. once the supervisor that holds its other end is gone."""

    def watch() -> None:
        while True:
            try:
                if not os.read(fd, 64):
                    break
            except OSError:
                break
        log.warning("the supervising process is gone: stopping")
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, name="accord-parent-watch", daemon=True)
    thread.start()
    return thread


def tidy_when_orphaned(directory: str, parent: int) -> None:
    """At a child's exit: remove the node's metrics directory if the supervisor (pid
    ``parent``) died without removing it and this was its last child (the directory is
    empty once every child has stopped: each removes its own socket)."""
    if os.getppid() != parent:
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def child_argv(config_path: str | None, flags: Mapping[str, object]) -> list[str]:
    """``accord serve`` with the settings the supervisor was given on its command line (the
    settings file and the environment reach the children as they reached it)."""
    argv = [sys.executable, "-m", "accord", "serve"]
    if config_path is not None:
        argv += ["--config", config_path]
    for name, value in flags.items():
        if value is None:
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            argv.append(flag if value else "--no-" + name.replace("_", "-"))
        else:
            argv += [flag, str(value)]
    return argv


@dataclass
class _Child:
    process: subprocess.Popen[bytes]
    started: float


def _ended(status: int) -> str:
    if status < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-status).name}"
    return f"exit status {status}"


class Supervisor:
    """Runs ``processes`` children of ``argv`` on ``sockets`` (bound and listening) until
    stopped; :meth:`run` returns the exit status."""

    def __init__(
        self, argv: list[str], processes: int, sockets: list[socket.socket], grace_s: float
    ) -> None:
        self.argv = argv
        self.processes = processes
        self.sockets = sockets
        self.grace_s = grace_s
        self.restarts = Restarts(processes)
        self.children: dict[int, _Child] = {}
        self.due: dict[int, float] = {}  # children to start again, and when
        self.signals: list[int] = []
        self.stopping_since: float | None = None
        self.status = 0
        self._parent_r = self._parent_w = -1
        self.metrics_dir = ""

    # --- the loop ------------------------------------------------------------------------

    def run(self) -> int:
        self._parent_r, self._parent_w = os.pipe()  # not inheritable: passed to children only
        self.metrics_dir = tempfile.mkdtemp(prefix="accord-metrics-")  # mode 0700
        wake_r, wake_w = socket.socketpair()
        wake_r.setblocking(False)
        wake_w.setblocking(False)
        previous_wakeup = signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
        handled = (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)
        previous = {signum: signal.signal(signum, self._on_signal) for signum in handled}
        try:
            for index in range(1, self.processes + 1):
                if not self._start(index):
                    break
            return self._loop(wake_r)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            signal.set_wakeup_fd(previous_wakeup)
            wake_r.close()
            wake_w.close()
            os.close(self._parent_r)
            os.close(self._parent_w)
            shutil.rmtree(self.metrics_dir, ignore_errors=True)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.signals.append(signum)

    def _loop(self, wake: socket.socket) -> int:
        while True:
            now = time.monotonic()
            while self.signals:
                self._signalled(self.signals.pop(0), now)
            self._reap(now)
            if self.stopping_since is not None:
                if not self.children:
                    log.info("every process stopped")
                    return self.status
                if now > self.stopping_since + self.grace_s + STOP_MARGIN_S:
                    log.error("processes still running after the grace: killing them")
                    self._kill_all()
                    return self.status or 1
            for index, when in sorted(self.due.items()):
                if when <= now:
                    del self.due[index]
                    self._start(index)
            timeout = min([*self.due.values(), now + 1.0]) - now
            with contextlib.suppress(InterruptedError):
                select.select([wake], [], [], max(timeout, 0.0))
            with contextlib.suppress(BlockingIOError):
                while wake.recv(512):
                    pass

    def _signalled(self, signum: int, now: float) -> None:
        if signum not in (signal.SIGINT, signal.SIGTERM):
            return  # SIGCHLD: only wakes the loop, which reaps
        name = signal.Signals(signum).name
        if self.stopping_since is None:
            log.info("%s: stopping %d process(es)", name, len(self.children))
            self._stop(now, 0)
        else:
            log.warning("%s again: killing every process", name)
            self._kill_all()
            self.status = self.status or 1

    def _reap(self, now: float) -> None:
        for index, child in list(self.children.items()):
            status = child.process.poll()
            if status is None:
                continue
            del self.children[index]
            pid, how = child.process.pid, _ended(status)
            if self.stopping_since is not None:
                if status not in (0, -signal.SIGTERM, -signal.SIGINT) and self.status == 0:
                    log.warning("process %d pid %d stopped with %s", index, pid, how)
                    self.status = 1
                continue
            if status == EXIT_REFUSED:
                log.error(
                    "process %d pid %d refused its settings (%s): stopping everything",
                    index,
                    pid,
                    how,
                )
                self._stop(now, EXIT_REFUSED)
                continue
            delay = self.restarts.exited(index, child.started, now)
            if delay is None:
                log.error(
                    "process %d pid %d ended (%s): a crash loop (%d exits within %.0f s); "
                    "stopping everything",
                    index,
                    pid,
                    how,
                    CRASH_EXITS,
                    CRASH_WINDOW_S,
                )
                self._stop(now, EXIT_CRASH_LOOP)
                continue
            log.warning(
                "process %d pid %d ended (%s): starting it again in %.1f s", index, pid, how, delay
            )
            self.due[index] = now + delay

    # --- the children --------------------------------------------------------------------

    def _start(self, index: int) -> bool:
        fds = [sock.fileno() for sock in self.sockets]
        env = {
            **os.environ,
            LISTEN_FDS: ",".join(map(str, fds)),
            PROCESS: str(index),
            PARENT_FD: str(self._parent_r),
            METRICS_DIR: self.metrics_dir,
        }
        try:
            process = subprocess.Popen(
                self.argv,
                env=env,
                pass_fds=(*fds, self._parent_r),
                # Its own process group: a terminal's Ctrl-C reaches the supervisor alone,
                # which stops the children in order.
                process_group=0,
            )
        except OSError as exc:
            log.error("cannot start process %d: %s: stopping everything", index, exc)
            self._stop(time.monotonic(), EXIT_CRASH_LOOP)
            return False
        self.children[index] = _Child(process, time.monotonic())
        log.info("process %d pid %d started", index, process.pid)
        return True

    def _stop(self, now: float, status: int) -> None:
        self.stopping_since = now
        self.status = status
        self.due.clear()
        for child in self.children.values():
            with contextlib.suppress(ProcessLookupError):
                child.process.send_signal(signal.SIGTERM)

    def _kill_all(self) -> None:
        self.due.clear()
        for child in self.children.values():
            with contextlib.suppress(ProcessLookupError):
                child.process.kill()
        for child in self.children.values():
            child.process.wait()
        self.children.clear()
