"""``accord serve --processes N`` as real processes on PostgreSQL: N children serve one port,
a signal stops them all, a dead child is started again, a child whose settings are refused
or a crash loop stop everything, and children do not outlive their supervisor.

The supervisor's log says when each child starts (``process K pid P started``) and each
child's own lines say ``[process K pid P]``: the tests wait on those lines and on answers,
never on a guessed time. The scale-out agent's ``pid`` answers with the process that ran it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.processes import ServerProcess, free_port
from tests.waiting import eventually

pytestmark = [pytest.mark.processes]

HERE = Path(__file__).resolve().parent
HEADERS = {"A2A-Version": "1.0"}
STARTED = re.compile(r"accord\.processes: process (\d+) pid (\d+) started")
# accord's HTTP server says it listens; uvicorn that the application started.
LISTENING = re.compile(
    r"\[process (\d+) pid (\d+)\] "
    r"(?:accord\.server: listening on |uvicorn\.error: Application startup complete)"
)
PATIENCE_S = 60.0  # a guard against a hang, not a timing assertion


@dataclass
class Supervised(ServerProcess):
    url: str

    def started(self) -> dict[int, int]:
        """Each child's latest pid, by its number, as the supervisor logged it."""
        return {int(k): int(pid) for k, pid in STARTED.findall(self.log())}

    def listening(self) -> set[int]:
        """The pids of the children that said they listen."""
        return {int(pid) for _, pid in LISTENING.findall(self.log())}

    def wait_serving(self, processes: int) -> dict[int, int]:
        """Once every child (the latest of each number) listens: their pids by number."""

        def all_listening() -> dict[int, int] | None:
            assert self.process.poll() is None, self.log()[-3000:]
            pids = self.started()
            if len(pids) == processes and set(pids.values()) <= self.listening():
                return pids
            return None

        found = eventually(all_listening, f"{processes} processes listening", PATIENCE_S)
        assert found is not None
        return found

    def wait_exit(self) -> int:
        try:
            return self.process.wait(PATIENCE_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the supervisor did not exit: {self.log()[-3000:]}") from None


def supervise(
    store: str,
    workdir: Path,
    *args: str,
    agent: str = "scaleout_agents:agent",
    grace_s: float | None = None,
) -> Supervised:
    port = free_port()
    log_path = workdir / f"supervisor-{port}.log"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    if grace_s is not None:
        env["ACCORD_SHUTDOWN_GRACE_S"] = str(grace_s)
    command = [
        sys.executable, "-m", "accord", "serve",
        "--port", str(port),
        "--store", store,
        "--agent", agent,
        "--log-level", "info",
        *args,
    ]  # fmt: skip
    with log_path.open("wb") as log:  # a file, not a pipe: a full pipe would block them
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    return Supervised(process, log_path, f"http://127.0.0.1:{port}")


@pytest.fixture
def supervisors() -> Iterator[list[Supervised]]:
    """The supervisors a test starts: killed after it, with their children (should they
    linger: the children watch their parent, see test_children_stop_when_their_parent_dies)."""
    started: list[Supervised] = []
    yield started
    for supervisor in started:
        children = supervisor.started().values()
        if supervisor.process.poll() is None:
            supervisor.process.send_signal(signal.SIGTERM)
            try:
                supervisor.process.wait(30)
            except subprocess.TimeoutExpired:
                supervisor.process.kill()
                supervisor.process.wait()
        for pid in children:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def answered_by(url: str) -> int:
    """The pid of the process that ran a ``pid`` message sent on a new connection."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "role": "ROLE_USER",
                "messageId": str(uuid.uuid4()),
                "parts": [{"text": "pid"}],
            }
        },
    }
    response = httpx.post(f"{url}/", json=body, headers=HEADERS, timeout=30)
    task = response.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    text = task["artifacts"][0]["parts"][0]["text"]
    return int(text.removeprefix("pid "))


def gone(pid: int) -> bool:
    """The process ``pid`` has ended (a zombie nobody reaped yet has ended too)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def environment(pid: int) -> dict[str, str]:
    """The environment the process ``pid`` started with."""
    entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(e.decode().partition("=")[::2] for e in entries if e)


def serves_from_both(url: str, pids: set[int]) -> None:
    seen: set[int] = set()

    def every_pid_answered() -> bool:
        seen.add(answered_by(url))
        assert seen <= pids, f"answered by {seen - pids}, not a child ({pids})"
        return seen == pids

    eventually(every_pid_answered, f"answers from each of {sorted(pids)}", PATIENCE_S, 0.01)


@pytest.mark.postgres
@pytest.mark.parametrize("http", ["accord", "uvicorn"])
def test_two_processes_serve_one_port_and_a_sigterm_stops_both(
    http: str, pg_url: str, tmp_path: Path, supervisors: list[Supervised]
) -> None:
    supervisor = supervise(pg_url, tmp_path, "--processes", "2", "--http", http)
    supervisors.append(supervisor)
    pids = supervisor.wait_serving(2)
    assert len(set(pids.values())) == 2
    assert supervisor.process.pid not in pids.values()
    serves_from_both(supervisor.url, set(pids.values()))
    metrics_dir = Path(environment(pids[2])["ACCORD_METRICS_DIR"])
    assert metrics_dir.stat().st_mode & 0o777 == 0o700

    supervisor.process.send_signal(signal.SIGTERM)
    assert supervisor.wait_exit() == 0
    assert all(gone(pid) for pid in pids.values())
    assert not metrics_dir.exists()  # the supervisor removed it
    log = supervisor.log()
    assert "SIGTERM: stopping 2 process(es)" in log
    assert "every process stopped" in log
    stopping = "accord.server: stopping" if http == "accord" else "uvicorn.error: Shutting down"
    for k, pid in pids.items():
        assert f"[process {k} pid {pid}] {stopping}" in log


def open_stream(url: str) -> socket.socket:
    """A SendStreamingMessage whose task works until canceled (``slow``), its stream open
    (its first bytes read) when this returns: a response in progress for a graceful stop."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {
                "message": {
                    "role": "ROLE_USER",
                    "messageId": str(uuid.uuid4()),
                    "parts": [{"text": "slow"}],
                }
            },
        }
    ).encode()
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=PATIENCE_S)
    sock.sendall(
        b"POST / HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"
        b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    assert sock.recv(4096).startswith(b"HTTP/1.1 200"), "the stream did not start"
    return sock


@pytest.mark.postgres
def test_a_second_signal_kills_the_children_and_exits_1(
    pg_url: str, tmp_path: Path, supervisors: list[Supervised]
) -> None:
    supervisor = supervise(pg_url, tmp_path, "--processes", "2", grace_s=60)
    supervisors.append(supervisor)
    pids = supervisor.wait_serving(2)
    with open_stream(supervisor.url):
        supervisor.process.send_signal(signal.SIGTERM)
        # One child waits for the open stream (up to its 60 s of grace) …
        eventually(
            lambda: "letting responses in progress finish" in supervisor.log(), "a graceful stop"
        )
        supervisor.process.send_signal(signal.SIGINT)  # … until the second signal
        assert supervisor.wait_exit() == 1
    assert all(gone(pid) for pid in pids.values())
    assert "SIGINT again: killing every process" in supervisor.log()


@pytest.mark.postgres
def test_a_killed_child_is_started_again_and_the_port_keeps_answering(
    pg_url: str, tmp_path: Path, supervisors: list[Supervised]
) -> None:
    supervisor = supervise(pg_url, tmp_path, "--processes", "2")
    supervisors.append(supervisor)
    before = supervisor.wait_serving(2)
    os.kill(before[1], signal.SIGKILL)
    # The other child answers meanwhile (a connection the dead one would have taken waits in
    # the listening socket's queue for a live one).
    assert answered_by(supervisor.url) in before.values()

    def restarted() -> dict[int, int] | None:
        pids = supervisor.started()
        return pids if pids[1] != before[1] else None

    eventually(restarted, "process 1 started again", PATIENCE_S)
    after = supervisor.wait_serving(2)
    assert after[2] == before[2] and after[1] != before[1]
    assert f"process 1 pid {before[1]} ended (killed by SIGKILL): starting it again in 0.5 s" in (
        supervisor.log()
    )
    serves_from_both(supervisor.url, set(after.values()))


@pytest.mark.postgres
def test_a_child_that_refuses_its_agent_stops_everything_with_exit_2(
    pg_url: str, tmp_path: Path, supervisors: list[Supervised]
) -> None:
    supervisor = supervise(pg_url, tmp_path, "--processes", "2", agent="no_such_module:agent")
    supervisors.append(supervisor)
    assert supervisor.wait_exit() == 2
    log = supervisor.log()
    assert "refused its settings (exit status 2): stopping everything" in log
    assert "no_such_module" in log
    assert all(gone(pid) for pid in supervisor.started().values())


@pytest.mark.postgres
def test_children_stop_when_their_parent_dies(
    pg_url: str, tmp_path: Path, supervisors: list[Supervised]
) -> None:
    supervisor = supervise(pg_url, tmp_path, "--processes", "2")
    supervisors.append(supervisor)
    pids = supervisor.wait_serving(2)
    metrics_dir = Path(environment(pids[1])["ACCORD_METRICS_DIR"])
    assert sorted(p.name for p in metrics_dir.iterdir()) == ["1.sock", "2.sock"]
    supervisor.kill()  # SIGKILL: the supervisor cannot tell anyone

    eventually(lambda: all(gone(pid) for pid in pids.values()), "the children to end", PATIENCE_S)
    log = supervisor.log()
    for k, pid in pids.items():
        assert f"[process {k} pid {pid}] accord.processes: the supervising process is gone" in log
    assert not metrics_dir.exists()  # the last child out removed the node's metrics directory


def test_a_crash_loop_stops_everything_with_exit_3(
    tmp_path: Path, supervisors: list[Supervised]
) -> None:
    # Nothing listens on the store's port: every child fails to start (exit 3), again and
    # again (after 0.5, 1, 2 and 4 s), until one has ended 5 times within 30 s.
    dead = f"postgresql://postgres@127.0.0.1:{free_port()}/accord"
    supervisor = supervise(dead, tmp_path, "--processes", "2")
    supervisors.append(supervisor)
    assert supervisor.wait_exit() == 3
    log = supervisor.log()
    assert "a crash loop (5 exits within 30 s); stopping everything" in log
    assert "starting it again in 4.0 s" in log


@pytest.mark.parametrize(
    ("store", "why"),
    [("memory://", "a memory store"), ("sqlite:///refused.db", "a SQLite store")],
)
def test_a_store_the_processes_cannot_share_is_refused_with_exit_2(
    store: str, why: str, tmp_path: Path, supervisors: list[Supervised]
) -> None:
    supervisor = supervise(store, tmp_path, "--processes", "2")
    supervisors.append(supervisor)
    assert supervisor.wait_exit() == 2
    log = supervisor.log()
    assert f"accord: processes = 2 needs a store the processes share (postgresql://…): {why}" in (
        log
    )
    assert "started" not in log  # no child


# --- /metrics for the node ------------------------------------------------------------------

SCRAPED_BY = re.compile(r"\[process (\d+) pid \d+\] accord\.access: GET /metrics 200")


def scrape(url: str) -> dict[str, float]:
    """One scrape on a new connection: the node's request count and its process gauges."""
    response = httpx.get(f"{url}/metrics", timeout=30)
    assert response.status_code == 200, response.text
    found = {"requests": 0.0}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            if sample.name == "accord_requests_total":
                found["requests"] += sample.value
            elif sample.name in ("accord_processes", "accord_processes_scraped"):
                found[sample.name] = sample.value
            elif sample.name == "process_start_time_seconds":
                found[f"started {sample.labels['process']}"] = sample.value
    return found


def scrapers(supervisor: Supervised) -> set[int]:
    """The children (by number) that answered a scrape, as their access log says."""
    return {int(k) for k in SCRAPED_BY.findall(supervisor.log())}


@pytest.mark.postgres
@pytest.mark.parametrize("http", ["accord", "uvicorn"])
def test_metrics_answer_for_every_process_and_leave_out_a_dead_one(
    http: str, pg_url: str, tmp_path: Path, supervisors: list[Supervised]
) -> None:
    supervisor = supervise(pg_url, tmp_path, "--processes", "2", "--access-log", "--http", http)
    supervisors.append(supervisor)
    pids = supervisor.wait_serving(2)
    # Requests on new connections, at least 20, until each child has answered some.
    answers: list[int] = []

    def each_answered() -> bool:
        answers.append(answered_by(supervisor.url))
        return len(answers) >= 20 and set(answers) == set(pids.values())

    eventually(each_answered, "answers from each process", PATIENCE_S, 0.0)
    seen: list[dict[str, float]] = []

    def scraped_by_both() -> bool:
        seen.append(scrape(supervisor.url))
        return scrapers(supervisor) == {1, 2}

    # Scrapes on new connections until each child has answered one (the kernel picks).
    eventually(scraped_by_both, "a scrape answered by each process", PATIENCE_S, 0.0)
    for found in seen:  # whichever child answered: the node's numbers
        assert found["requests"] == len(answers), (len(answers), seen)
        assert found["accord_processes"] == 2 and found["accord_processes_scraped"] == 2, seen
        assert {"started 1", "started 2"} <= set(found), found  # both interpreters, labelled

    os.kill(pids[1], signal.SIGKILL)
    eventually(lambda: gone(pids[1]), "process 1 to end", PATIENCE_S)
    # Until process 1 is back (after a backoff and its start-up), scrapes still answer, for
    # process 2 alone.
    down = scrape(supervisor.url)
    assert down["accord_processes"] == 2 and down["accord_processes_scraped"] == 1, down
    assert "started 1" not in down and "started 2" in down
    assert down["requests"] == answers.count(pids[2])

    def both_again() -> dict[str, float] | None:
        found = scrape(supervisor.url)
        return found if found["accord_processes_scraped"] == 2 else None

    again = eventually(both_again, "a scrape of both processes again", PATIENCE_S, 0.01)
    assert again["started 1"] != seen[0]["started 1"]  # the new process 1's numbers
    assert again["requests"] == answers.count(pids[2])  # (the new process 1 has answered none)
    assert "accord.telemetry: metrics: process 1 did not answer" in supervisor.log()
