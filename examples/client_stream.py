"""Stream a message's events as they arrive (the stream resumes by itself if it breaks).

python examples/client_stream.py [URL] [TEXT]
"""

from __future__ import annotations

import asyncio
import sys

from accord.client import Client, ClientError, ResumePolicy
from accord.wire import StreamResponse


def show(event: StreamResponse) -> str:
    if event.task:
        return f"task {event.task.id} {event.task.status.state}"
    if event.status_update:
        return f"status {event.status_update.status.state}"
    if event.artifact_update:
        update = event.artifact_update
        text = "".join(p.text for p in update.artifact.parts if isinstance(p.text, str))
        return f"artifact {update.artifact.artifact_id} {'+' if update.append else '='} {text!r}"
    if event.message:
        return f"message {event.message.text()!r}"
    return "?"


async def main(url: str, text: str) -> None:
    async with Client.connect(url, resume=ResumePolicy(max_attempts=10)) as client:
        async for event in client.stream(text):
            print(show(event))


if __name__ == "__main__":
    args = sys.argv[1:]
    try:
        asyncio.run(
            main(
                args[0] if args else "http://127.0.0.1:9999", args[1] if len(args) > 1 else "hello"
            )
        )
    except ClientError as exc:
        sys.exit(f"error: {exc}")
