"""The command surface under concurrent creations: exactly the tenant's limit is created (in
remote mode, the store refuses the rest) and every other command answers ``task-limit``,
blocking or streaming."""

from __future__ import annotations

import asyncio

import pytest
from surface_helpers import message, surface

LIMIT = 3
BURST = 10


@pytest.mark.parametrize(
    ("path", "configuration"),
    [
        ("/tasks/commands/message:send", {"returnImmediately": True}),
        ("/tasks/commands/message:stream", {}),
    ],
)
async def test_concurrent_creations_stop_at_the_tenant_limit(
    path: str, configuration: dict[str, bool]
) -> None:
    async with surface(tasks_per_tenant=LIMIT) as s:
        answers = await asyncio.gather(
            *(
                s.post(path, {"message": message(f"m{n}"), "configuration": configuration})
                for n in range(BURST)
            )
        )
        outcomes = sorted((status, body["outcome"]) for status, body in answers)
        assert outcomes == [(200, "task-created")] * LIMIT + [(502, "task-limit")] * (BURST - LIMIT)
        status, listed = await s.get("/tasks/views/tasks")
        assert status == 200 and len(listed["rows"]) == LIMIT
