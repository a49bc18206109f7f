"""The agent the official conformance kit (a2a-tck, 1.0 suite) drives.

The kit keys each scenario on the prefix of the message's ``messageId``; the longest matching
prefix wins. Any other message completes its task. See docs/conformance.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from accord.agents._api import RequestContext, TaskHandle
from accord.wire import Part, TaskState

TCK_FILE_BYTES = b"tck"

Behaviour = Callable[[RequestContext, TaskHandle], Awaitable[None]]


def _file_part() -> Part:
    return Part(raw=TCK_FILE_BYTES, filename="output.txt", media_type="text/plain")


class ConformanceAgent:
    """Scenario behaviours by messageId prefix."""

    resubscribe_delay_s = 4.0

    def __init__(self) -> None:
        scenarios = {
            "tck-complete-task": self.complete_task,
            "tck-input-required": self.input_required,
            "tck-artifact-text": self.artifact_text,
            "tck-artifact-file-url": self.artifact_file_url,
            "tck-artifact-file": self.artifact_file,
            "tck-artifact-data": self.artifact_data,
            "tck-message-response": self.message_response,
            "tck-reject-task": self.reject_task,
            "tck-stream-001": self.streamed("Stream hello from TCK"),
            "tck-stream-002": self.complete_task,
            "tck-stream-003": self.streamed("Stream task lifecycle"),
            "tck-stream-ordering-001": self.streamed("Ordered output"),
            "tck-stream-artifact-text": self.streamed("Streamed text content"),
            "tck-stream-artifact-file": self.stream_artifact_file,
            "tck-stream-artifact-chunked": self.stream_artifact_chunked,
            "test-resubscribe-message-id": self.slow_task,
        }
        # Longest prefix first, so tck-artifact-file-url wins over tck-artifact-file.
        self.scenarios = sorted(scenarios.items(), key=lambda item: -len(item[0]))

    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None:
        message_id = ctx.message.message_id
        for prefix, behaviour in self.scenarios:
            if message_id.startswith(prefix):
                await behaviour(ctx, task)
                return
        await self.work(ctx, task)
        await task.complete(f"Completed {message_id}")

    async def cancel(self, ctx: RequestContext, task: TaskHandle) -> None:
        """Nothing to undo: cancellation stops the running scenario."""

    @staticmethod
    async def work(ctx: RequestContext, task: TaskHandle) -> None:
        if ctx.task is None or ctx.task.status.state is not TaskState.WORKING:
            await task.start_working()

    async def complete_task(self, ctx: RequestContext, task: TaskHandle) -> None:
        await self.work(ctx, task)
        await task.complete("Hello from TCK")

    async def input_required(self, ctx: RequestContext, task: TaskHandle) -> None:
        await self.work(ctx, task)
        await task.require_input()

    async def artifact_text(self, ctx: RequestContext, task: TaskHandle) -> None:
        await self.work(ctx, task)
        await task.update_artifact(text="Generated text content", last_chunk=True)
        await task.complete()

    async def artifact_file(self, ctx: RequestContext, task: TaskHandle) -> None:
        await self.work(ctx, task)
        await task.update_artifact(parts=[_file_part()], last_chunk=True)
        await task.complete()

    async def artifact_file_url(self, ctx: RequestContext, task: TaskHandle) -> None:
        await self.work(ctx, task)
        url_part = Part(
            url="https://example.com/output.txt", filename="output.txt", media_type="text/plain"
        )
        await task.update_artifact(parts=[url_part], last_chunk=True)
        await task.complete()

    async def artifact_data(self, ctx: RequestContext, task: TaskHandle) -> None:
        await self.work(ctx, task)
        await task.update_artifact(
            parts=[Part(data={"key": "value", "count": 42})], last_chunk=True
        )
        await task.complete()

    async def message_response(self, ctx: RequestContext, task: TaskHandle) -> None:
        if ctx.task is not None:
            await self.work(ctx, task)
            await task.complete("Direct message response")
            return
        await task.reply("Direct message response")

    async def reject_task(self, ctx: RequestContext, task: TaskHandle) -> None:
        if ctx.task is not None:
            await self.work(ctx, task)
        await task.reject("rejected")

    def streamed(self, text: str) -> Behaviour:
        async def behaviour(ctx: RequestContext, task: TaskHandle) -> None:
            await self.work(ctx, task)
            await task.update_artifact(text=text, last_chunk=True)
            await task.complete()

        return behaviour

    async def stream_artifact_file(self, ctx: RequestContext, task: TaskHandle) -> None:
        await self.work(ctx, task)
        await task.update_artifact(parts=[_file_part()], last_chunk=True)
        await task.complete()

    async def stream_artifact_chunked(self, ctx: RequestContext, task: TaskHandle) -> None:
        await self.work(ctx, task)
        artifact_id = await task.update_artifact(text="chunk-1 ")
        await task.update_artifact(
            text="chunk-2", artifact_id=artifact_id, append=True, last_chunk=True
        )
        await task.complete()

    async def slow_task(self, ctx: RequestContext, task: TaskHandle) -> None:
        await self.work(ctx, task)
        await asyncio.sleep(self.resubscribe_delay_s)
        await task.complete()


__all__ = ["ConformanceAgent"]
