"""A remote agent for ``accord serve --agent remote``, in plain httpx (no accord import).

It reads the Agent feed (``GET /tasks/events``, SSE, resumed with ``Last-Event-ID``), claims
each new task (``POST /tasks/claims``: one worker per task), and drives it with the agent
commands of the command surface: StartWorking, UpdateArtifact (an echo of the message), then
CompleteTask. Any language with an HTTP client can do the same.

    python examples/remote_worker.py --url http://127.0.0.1:9999 --api-key "$WORKER_KEY"

It prints one JSON line per thing it did (``claimed``, ``completed``, ``lost``), which the
tests read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
from typing import Any

import httpx


def say(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


class Worker:
    def __init__(self, url: str, api_key: str | None, name: str, work_s: float) -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        self.http = httpx.AsyncClient(base_url=url, headers=headers, timeout=30)
        self.name = name
        self.work_s = work_s
        self.last_event_id = ""
        self.running: set[asyncio.Task[None]] = set()

    async def command(self, name: str, body: dict[str, Any]) -> httpx.Response:
        return await self.http.post(f"/tasks/commands/tasks:{name}", json=body)

    async def claim(self, task_id: str) -> dict[str, Any] | None:
        response = await self.http.post(
            "/tasks/claims", json={"taskId": task_id, "worker": self.name}
        )
        if response.status_code == 200:
            claim: dict[str, Any] = response.json()
            return claim
        return None  # another worker has it (409), or it is gone (404)

    async def work(self, task: dict[str, Any]) -> None:
        task_id = task["id"]
        message = task["history"][-1]
        text = "".join(part.get("text", "") for part in message.get("parts", []))
        await self.command("work", {"id": task_id})
        waited = 0.0
        while waited < self.work_s:  # long work renews the claim before its lease runs out
            await asyncio.sleep(min(0.2, self.work_s - waited))
            waited += 0.2
            await self.claim(task_id)
        artifact = {"artifactId": f"echo-{task_id}", "name": "echo", "parts": [{"text": text}]}
        await self.command(
            "update_artifact",
            {"id": task_id, "artifact": artifact, "append": False, "last_chunk": True},
        )
        reply = {"messageId": f"done-{task_id}", "role": "ROLE_AGENT", "parts": [{"text": "done"}]}
        response = await self.command("complete", {"id": task_id, "status_message": reply})
        if response.status_code == 202:
            say(completed=task_id, worker=self.name)
        else:
            say(lost=task_id, worker=self.name, status=response.status_code)

    def on_event(self, name: str, payload: dict[str, Any]) -> None:
        if name not in ("a2a.tasks.TaskCreated", "accord.tasks.TaskMessageAdded"):
            return
        job = asyncio.ensure_future(self.take(payload["task_id"]))
        self.running.add(job)
        job.add_done_callback(self.running.discard)

    async def take(self, task_id: str) -> None:
        claim = await self.claim(task_id)
        if claim is None or claim["outcome"] != "claimed":
            return
        say(claimed=task_id, worker=self.name)
        try:
            await self.work(claim["task"])
        except httpx.HTTPError as exc:
            say(error=str(exc), task=task_id, worker=self.name)

    async def read_feed(self) -> None:
        """Follow the feed for ever, reconnecting where it stopped."""
        while True:
            headers = {"Last-Event-ID": self.last_event_id} if self.last_event_id else {}
            try:
                async with self.http.stream(
                    "GET", "/tasks/events", headers=headers, timeout=None
                ) as response:
                    response.raise_for_status()
                    say(connected=self.name)
                    await self.parse(response)
            except httpx.HTTPError as exc:
                say(reconnecting=str(exc), worker=self.name)
                await asyncio.sleep(0.5)

    async def parse(self, response: httpx.Response) -> None:
        event_id, data = "", ""
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data += line[5:].strip()
            elif not line and data:
                event = json.loads(data)
                self.on_event(event["event"], event["payload"])
                self.last_event_id, data = event_id, ""


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:9999")
    parser.add_argument("--api-key", default=os.environ.get("ACCORD_WORKER_KEY"))
    parser.add_argument("--name", default=f"{socket.gethostname()}-{os.getpid()}")
    parser.add_argument("--work-seconds", type=float, default=0.0, help="pretend work takes this")
    args = parser.parse_args()
    worker = Worker(args.url, args.api_key, args.name, args.work_seconds)
    await worker.read_feed()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
