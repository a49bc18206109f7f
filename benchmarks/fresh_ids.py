"""Are the benchmarks' message ids fresh? Three wrk runs of SendMessage made as run.py and
tails.py make them (two with the same scenario, connection count and repeat) against one
``accord serve --agent echo`` on SQLite; then the tasks in its database against the requests
wrk saw answered. Safe retries answer a repeated messageId with the first task, so a replay
would show as fewer tasks than answers.

    benchmarks/.venv/bin/python benchmarks/fresh_ids.py     # --seconds 2 --connections 8

Runs in the interpreter that starts it; needs ``wrk`` on PATH.
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import HERE, Server, Target, _tmp_root, free_port, run_wrk


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=2)
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="accord-ids-", dir=_tmp_root()) as tmp:
        workdir = Path(tmp)
        db = workdir / "ids.db"
        populate = [sys.executable, str(HERE / "populate_accord.py"), "--db", str(db)]
        subprocess.run([*populate, "--count", "1"], check=True, stdout=subprocess.DEVNULL)
        port = free_port()
        argv = [sys.executable, "-m", "accord", "serve", "--store", f"sqlite:///{db}"]
        argv += ["--host", "127.0.0.1", "--port", str(port), "--agent", "echo"]
        argv += ["--log-level", "warning"]
        server = Server("ids", argv, port, "/.well-known/agent-card.json", workdir / "ids.log")
        server.start()
        answered = 0
        try:
            target = Target("accord-jsonrpc", server, "jsonrpc", "/")
            for repeat in (0, 0, 1):
                result = run_wrk(target, "send", args.connections, args.seconds, workdir,
                                 stored=1, total=1, repeat=repeat)  # fmt: skip
                print(f"run (repeat {repeat}): {result.requests} answered, valid {result.valid}")
                answered += result.requests
        finally:
            server.stop()
        with sqlite3.connect(db) as connection:
            (tasks,) = connection.execute("SELECT count(*) FROM tasks").fetchone()
        created = tasks - 1  # the one task the fill wrote
        # Requests still in flight when wrk stops are answered to nobody, but make tasks.
        verdict = "fresh" if created >= answered else "REPLAYED"
        print(f"answered {answered}, tasks created {created}: ids {verdict}")


if __name__ == "__main__":
    main()
