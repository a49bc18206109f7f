"""CreateTaskPushNotificationConfig on a task that retention deletes while the command runs:
the client is told the task is not found, and no config is left behind."""

from __future__ import annotations

from typing import Any

import pytest

from accord.agents._echo import echo
from accord.core._caller import Caller
from accord.engine import Engine
from accord.store._memory import MemoryStore
from accord.wire import A2AError, ErrorKind
from accord.wire._model import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
)

ALICE = Caller(identity="alice", tenant="t1")


class SweptStore(MemoryStore):
    """Retention deletes every terminal task right after the command read the task."""

    async def list_push_configs(self, task_id: str) -> Any:
        configs = await super().list_push_configs(task_id)
        await self.delete_terminal_before(2**62)
        return configs


async def test_a_config_for_a_task_deleted_meanwhile_is_task_not_found() -> None:
    store = SweptStore()
    async with Engine(store, echo) as engine:
        request = SendMessageRequest(
            message=Message(message_id="m1", role=Role.USER, parts=[Part(text="hi")])
        )
        task = await engine.send_message(request, ALICE)
        assert isinstance(task, Task)
        config = TaskPushNotificationConfig(url="https://hooks.example/a", task_id=task.id)
        with pytest.raises(A2AError) as raised:
            await engine.create_push_config(config, ALICE)
        assert raised.value.kind is ErrorKind.TASK_NOT_FOUND
        assert await store.all_push_configs() == []
