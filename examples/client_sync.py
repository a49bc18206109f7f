"""The blocking client, for scripts: send, stream, list, and handle a typed error.

python examples/client_sync.py [URL]
"""

from __future__ import annotations

import sys

from accord.client import ClientError, SyncClient, TaskNotFoundError
from accord.wire import Task


def main(url: str) -> None:
    with SyncClient(url) as client:
        answer = client.send("hello from a script")
        if isinstance(answer, Task):
            print("task:", answer.id, answer.status.state)
        else:
            print("message:", answer.text())
        for event in client.stream("and a stream"):
            print("event:", event.which)
        for task in client.list_tasks(page_size=20):
            print("listed:", task.id, task.status.state)
        try:
            client.get_task("no-such-task")
        except TaskNotFoundError as exc:
            print("as expected:", exc)


if __name__ == "__main__":
    try:
        main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:9999")
    except ClientError as exc:
        sys.exit(f"error: {exc}")
