"""Send a message to an A2A agent and print the answer, then look the task up again.

accord serve --store memory://          # in another terminal
python examples/client_basic.py [URL] [TEXT]
"""

from __future__ import annotations

import asyncio
import sys

from accord.client import Client, ClientError
from accord.wire import Message, Task


async def main(url: str, text: str) -> None:
    async with Client.connect(url) as client:
        print(f"agent {client.card.name!r} over {client.binding} at {client.interface.url}")
        answer = await client.send(text)
        if isinstance(answer, Message):
            print("message:", answer.text())
            return
        assert isinstance(answer, Task)
        print(f"task {answer.id}: {answer.status.state}")
        for artifact in answer.artifacts:
            print(
                f"  artifact {artifact.name or artifact.artifact_id}:",
                "".join(p.text for p in artifact.parts if isinstance(p.text, str)),
            )
        again = await client.get_task(answer.id, history_length=0)
        print("fetched again:", again.status.state)


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
