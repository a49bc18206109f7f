"""The push-notification configs of tasks: the four config commands, and configs sent inline
with a message.

Reads the engine's settings, clock and ids when called (not when built), and tells its push
hooks of every config stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from accord.core import Caller, PushConfigRecord, TaskRecord
from accord.core import client as client_commands
from accord.engine._errors import limit_error
from accord.push import check_config
from accord.store import LimitExceeded, TaskGone
from accord.wire import (
    UNSET,
    A2AError,
    ErrorKind,
    SendMessageRequest,
    TaskPushNotificationConfig,
    task_not_found,
)

if TYPE_CHECKING:
    from accord.engine._engine import Engine

INLINE_PREFIX = "configuration.taskPushNotificationConfig."  # where an inline config sits


class PushConfigs:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def create(
        self, config: TaskPushNotificationConfig, caller: Caller
    ) -> TaskPushNotificationConfig:
        engine = self.engine
        tenant = caller.tenant
        record = await engine.store.get_task(config.task_id, tenant)
        existing = await engine.store.list_push_configs(config.task_id) if record else []
        outcome = client_commands.create_push_config(
            record,
            config,
            tenant=tenant,
            existing=existing,
            new_id=engine.new_id(),
            now_ms=engine.clock(),
            limits=engine.config.limits,
            push_supported=engine.config.push_notifications,
        )
        if outcome.error is not None:
            raise outcome.error
        assert outcome.config is not None
        check_config(config)
        await engine.check_push_url(config.url, "url")
        await self._put(outcome.config)
        return outcome.config.config

    async def _put(self, config: PushConfigRecord) -> None:
        """Store a config of an existing task, under the task's config limit (counted again
        by the store: concurrent puts passed the check before it together)."""
        try:
            await self.engine.store.put_push_config(
                config, max_per_task=self.engine.config.limits.push_configs_per_task
            )
        except LimitExceeded as exc:
            raise limit_error(exc) from None
        except TaskGone:  # deleted (by retention) since it was read
            raise task_not_found(config.config.task_id) from None
        self.engine.push_config_stored(config.config.task_id)

    async def get(self, task_id: str, config_id: str, caller: Caller) -> TaskPushNotificationConfig:
        engine = self.engine
        record = await engine.store.get_task(task_id, caller.tenant)
        stored = await engine.store.get_push_config(task_id, config_id) if record else None
        outcome = client_commands.get_push_config(
            record,
            stored,
            tenant=caller.tenant,
            task_id=task_id,
            config_id=config_id,
            push_supported=engine.config.push_notifications,
        )
        if outcome.error is not None:
            raise outcome.error
        return outcome.configs[0]

    async def list_all(self, task_id: str, caller: Caller) -> list[TaskPushNotificationConfig]:
        engine = self.engine
        record = await engine.store.get_task(task_id, caller.tenant)
        stored = await engine.store.list_push_configs(task_id) if record else []
        outcome = client_commands.list_push_configs(
            record,
            stored,
            tenant=caller.tenant,
            task_id=task_id,
            push_supported=engine.config.push_notifications,
        )
        if outcome.error is not None:
            raise outcome.error
        return outcome.configs

    async def delete(self, task_id: str, config_id: str, caller: Caller) -> None:
        engine = self.engine
        record = await engine.store.get_task(task_id, caller.tenant)
        outcome = client_commands.delete_push_config(
            record,
            tenant=caller.tenant,
            task_id=task_id,
            config_id=config_id,
            push_supported=engine.config.push_notifications,
        )
        if outcome.error is not None:
            raise outcome.error
        await engine.store.delete_push_config(task_id, config_id)

    # --- configs sent inline with SendMessage ---------------------------------------------

    async def requested_inline(
        self, request: SendMessageRequest
    ) -> TaskPushNotificationConfig | None:
        """The config sent with a message, if any: refused before anything is decided when
        this agent has no push notifications or its URL is not allowed."""
        inline = (
            request.configuration.task_push_notification_config
            if request.configuration is not UNSET
            else UNSET
        )
        if inline is UNSET:
            return None
        if not self.engine.config.push_notifications:
            raise A2AError(
                ErrorKind.PUSH_NOT_SUPPORTED, "this agent does not support push notifications"
            )
        check_config(inline, INLINE_PREFIX)
        await self.engine.check_push_url(inline.url, INLINE_PREFIX + "url")
        return inline

    async def add_inline(
        self, record: TaskRecord, config: TaskPushNotificationConfig, tenant: str
    ) -> None:
        """Store a config sent with a message that continues the existing task ``record``."""
        existing = await self.engine.store.list_push_configs(record.id)
        await self._put(self.inline(record, config, tenant, existing))

    def inline(
        self,
        record: TaskRecord,
        config: TaskPushNotificationConfig,
        tenant: str,
        existing: Sequence[PushConfigRecord],
    ) -> PushConfigRecord:
        """A push config sent inline with a message, checked as CreateTaskPushNotificationConfig
        would check it."""
        engine = self.engine
        outcome = client_commands.create_push_config(
            record,
            msgspec.structs.replace(config, task_id=record.id),
            tenant=tenant,
            existing=existing,
            new_id=engine.new_id(),
            now_ms=engine.clock(),
            limits=engine.config.limits,
        )
        if outcome.error is not None:
            raise outcome.error
        assert outcome.config is not None
        return outcome.config
