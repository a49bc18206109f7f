"""Every outcome of every client command (command-surface.md), with what it publishes."""

from __future__ import annotations

import pytest
from core_helpers import (
    T0,
    UNLIMITED,
    accepted,
    assert_refused,
    new_task,
    send,
    send_request,
    task_in,
    user_message,
)

from accord.core import Limits, Outcome, PushConfigRecord, TaskRecord, client
from accord.core._events import fold
from accord.core._outcome import Published
from accord.wire._codec import to_builtins
from accord.wire._errors import ErrorKind
from accord.wire._model import (
    UNSET,
    AuthenticationInfo,
    Message,
    Part,
    Role,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)
from accord.wire._time import format_timestamp

TERMINAL = [TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED]
NON_TERMINAL = [
    TaskState.SUBMITTED,
    TaskState.WORKING,
    TaskState.INPUT_REQUIRED,
    TaskState.AUTH_REQUIRED,
]

# --- SendMessage: task-created ---------------------------------------------------------------


def test_task_created_starts_submitted_with_the_message_bound_to_it() -> None:
    outcome = send(send_request(metadata={"k": "v"}), task_id="t-9", context_id="c-gen")
    record = accepted(outcome, "task-created")
    task = record.task
    assert (task.id, task.context_id) == ("t-9", "c-gen")
    assert task.status.state is TaskState.SUBMITTED
    assert task.status.timestamp == format_timestamp(T0)
    assert task.metadata == {"k": "v"}
    assert [(m.message_id, m.task_id, m.context_id) for m in task.history] == [
        ("m-1", "t-9", "c-gen")
    ]
    assert (record.tenant, record.seq, record.created_ms, record.updated_ms) == ("acme", 1, T0, T0)
    (event,) = outcome.events
    assert (event.task_id, event.seq, event.kind, event.at_ms) == ("t-9", 1, "task", T0)
    assert isinstance(event.body, Task)
    assert fold(outcome.events) == task
    assert outcome.published == [Published("a2a.tasks.TaskCreated", {"task_id": "t-9"})]


def test_task_created_keeps_the_clients_context_id() -> None:
    outcome = send(send_request(user_message(context_id="c-client")), context_id="c-gen")
    assert accepted(outcome, "task-created").task.context_id == "c-client"


def test_task_created_under_the_task_limit() -> None:
    limits = Limits(tasks_per_tenant=2)
    accepted(send(send_request(), count=1, limits=limits), "task-created")


# --- SendMessage: continued ----------------------------------------------------------------


@pytest.mark.parametrize("state", NON_TERMINAL)
def test_continued_appends_the_message_to_the_history(state: TaskState) -> None:
    record, log = task_in(state)
    request = send_request(user_message("more", task_id="t-1", message_id="m-2"))
    outcome = send(request, record, now_ms=T0 + 50)
    new = accepted(outcome, "continued")
    (event,) = outcome.events
    assert (event.kind, event.seq) == ("message", record.seq + 1)
    assert isinstance(event.body, Message)
    assert (event.body.task_id, event.body.context_id) == ("t-1", "c-1")
    assert new.task.history[-1] == event.body
    assert new.state is state  # the agent, not the message, moves the task
    assert new.seq == record.seq + 1
    assert fold([*log, *outcome.events]) == new.task
    assert outcome.published == []


def test_continued_with_the_tasks_own_context_id() -> None:
    record, _ = new_task()
    request = send_request(user_message(task_id="t-1", context_id="c-1"))
    accepted(send(request, record), "continued")


def test_continue_is_not_bound_by_the_task_limit() -> None:
    record, _ = new_task()
    outcome = send(
        send_request(user_message(task_id="t-1")),
        record,
        count=5,
        limits=Limits(tasks_per_tenant=1),
    )
    accepted(outcome, "continued")


# --- SendMessage: refusals -----------------------------------------------------------------


def test_task_not_found_for_an_unknown_task() -> None:
    outcome = send(send_request(user_message(task_id="t-404")), None)
    assert_refused(outcome, "task-not-found")
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.TASK_NOT_FOUND


def test_task_not_found_for_another_tenants_task() -> None:
    record, _ = new_task(tenant="acme")
    outcome = send(send_request(user_message(task_id="t-1")), record, tenant="globex")
    assert_refused(outcome, "task-not-found")
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.TASK_NOT_FOUND
    unknown = send(send_request(user_message(task_id="t-1")), None, tenant="globex").error
    assert unknown is not None
    # Another tenant's task is indistinguishable from no task.
    assert (outcome.error.message, outcome.error.metadata) == (unknown.message, unknown.metadata)


@pytest.mark.parametrize("state", TERMINAL)
def test_task_terminal(state: TaskState) -> None:
    record, _ = task_in(state)
    outcome = send(send_request(user_message(task_id="t-1")), record)
    assert_refused(outcome, "task-terminal")
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.UNSUPPORTED_OPERATION


def test_context_mismatch() -> None:
    record, _ = new_task()
    outcome = send(send_request(user_message(task_id="t-1", context_id="c-other")), record)
    assert_refused(outcome, "context-mismatch")
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.CONTEXT_MISMATCH
    assert [v.field for v in outcome.error.violations] == ["message.contextId"]


def test_context_not_accepted() -> None:
    request = send_request(user_message(context_id="c-client"))
    outcome = send(request, accept_client_context_ids=False)
    assert_refused(outcome, "context-not-accepted")
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.CONTEXT_NOT_ACCEPTED
    # Without a client context the agent generates one as usual.
    plain = send(send_request(), accept_client_context_ids=False, context_id="c-gen")
    assert accepted(plain, "task-created").task.context_id == "c-gen"


@pytest.mark.parametrize(
    ("part", "modes"),
    [
        (Part(data={"a": 1}), ["text/plain"]),
        (Part(text="hi"), ["application/json"]),
        (Part(raw=b"\x00"), ["text/*"]),
        (Part(url="https://x/y.png", media_type="image/png"), ["image/jpeg", "text/plain"]),
    ],
)
def test_content_type_not_supported(part: Part, modes: list[str]) -> None:
    message = Message(message_id="m", role=Role.USER, parts=[part])
    outcome = send(send_request(message), input_modes=modes)
    assert_refused(outcome, "content-type-not-supported")
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.CONTENT_TYPE_NOT_SUPPORTED
    # One refused part refuses the message, wherever it is.
    first_ok = Message(message_id="m", role=Role.USER, parts=[Part(text="ok"), part])
    later = send(send_request(first_ok), input_modes=[*modes, "text/plain"])
    if part.text is UNSET:
        assert_refused(later, "content-type-not-supported")


@pytest.mark.parametrize(
    ("part", "modes"),
    [
        (Part(data={"a": 1}), ["application/json"]),
        (Part(raw=b"\x00", media_type="image/png"), ["image/*"]),
        (Part(text="hi", media_type="text/markdown; charset=utf-8"), ["text/markdown"]),
        (Part(raw=b"\x00"), ["*/*"]),
    ],
)
def test_accepted_content_types(part: Part, modes: list[str]) -> None:
    message = Message(message_id="m", role=Role.USER, parts=[part])
    accepted(send(send_request(message), input_modes=modes), "task-created")


def test_task_limit() -> None:
    outcome = send(send_request(), count=2, limits=Limits(tasks_per_tenant=2))
    assert_refused(outcome, "task-limit")
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.RESOURCE_EXHAUSTED


def test_history_limit() -> None:
    record, _ = new_task()  # one message in the history
    request = send_request(user_message(task_id="t-1"))
    outcome = send(request, record, limits=Limits(messages_per_task=1))
    assert_refused(outcome, "history-limit")
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.RESOURCE_EXHAUSTED
    accepted(send(request, record, limits=Limits(messages_per_task=2)), "continued")


def test_direct_message_creates_no_task() -> None:
    reply = Message(message_id="r-1", role=Role.AGENT, parts=[Part(text="hi")], task_id="x")
    outcome = client.direct_message(reply, send_request(user_message(context_id="c-u")), "c-gen")
    assert outcome.name == "direct-message"
    assert outcome.error is None
    assert (outcome.events, outcome.record, outcome.published) == ([], None, [])
    assert outcome.message is not None
    assert (outcome.message.context_id, outcome.message.task_id) == ("c-u", "")
    generated = client.direct_message(reply, send_request(), "c-gen").message
    assert generated is not None
    assert generated.context_id == "c-gen"


# --- GetTask -------------------------------------------------------------------------------


def test_get_task_outcomes() -> None:
    record, _ = new_task(tenant="acme")
    found = client.get_task(record, tenant="acme", task_id="t-1")
    assert (found.name, found.record, found.events, found.published) == ("found", record, [], [])
    missing = client.get_task(None, tenant="acme", task_id="t-1")
    assert_refused(missing, "not-found")
    other = client.get_task(record, tenant="globex", task_id="t-1")
    assert_refused(other, "other-tenant")
    no_tenant = client.get_task(record, tenant="", task_id="t-1")
    assert_refused(no_tenant, "other-tenant")
    assert missing.error is not None and other.error is not None
    assert missing.error.kind is other.error.kind is ErrorKind.TASK_NOT_FOUND
    assert missing.error.message == other.error.message


# --- CancelTask ----------------------------------------------------------------------------


@pytest.mark.parametrize("state", NON_TERMINAL)
def test_canceled(state: TaskState) -> None:
    record, log = task_in(state)
    reason = Message(message_id="s-1", role=Role.USER, parts=[Part(text="stop")])
    outcome = client.cancel_task(
        record, tenant="acme", task_id="t-1", now_ms=T0 + 99, status_message=reason
    )
    new = accepted(outcome, "canceled")
    assert new.state is TaskState.CANCELED
    (event,) = outcome.events
    assert (event.kind, event.seq) == ("status", record.seq + 1)
    assert isinstance(event.body, TaskStatusUpdateEvent)
    assert new.task.history[-1].role is Role.AGENT  # a status message is the agent's
    assert new.updated_ms == T0 + 99
    assert fold([*log, *outcome.events]) == new.task
    assert outcome.published == [
        Published(
            "a2a.tasks.TaskStatusUpdated",
            {
                "task_id": "t-1",
                "context_id": "c-1",
                "status": {
                    "state": "TASK_STATE_CANCELED",
                    "message": {
                        "messageId": "s-1",
                        "role": "ROLE_AGENT",
                        "parts": [{"text": "stop"}],
                        "contextId": "c-1",
                        "taskId": "t-1",
                    },
                    "timestamp": format_timestamp(T0 + 99),
                },
            },
        )
    ]


def test_a_cancel_logs_the_metadata_the_agent_says_it_leaves_in_the_same_append() -> None:
    record, log = task_in(TaskState.INPUT_REQUIRED)
    asked: list[Task] = []

    def final(task: Task) -> dict[str, object]:
        asked.append(task)
        return {"children": "canceled with it"}

    outcome = client.cancel_task(
        record, tenant="acme", task_id="t-1", now_ms=T0 + 5, final_metadata=final
    )
    new = accepted(outcome, "canceled")
    assert asked == [record.task]
    snapshot, status = outcome.events
    assert (snapshot.kind, snapshot.seq, status.kind, status.seq) == (
        "task", record.seq + 1, "status", record.seq + 2,
    )  # fmt: skip
    assert new.state is TaskState.CANCELED
    assert new.task.metadata == {"children": "canceled with it"}
    assert fold([*log, *outcome.events]) == new.task
    # None leaves the metadata as it is: the cancel alone; a refusal asks nothing.
    unchanged = client.cancel_task(
        record, tenant="acme", task_id="t-1", now_ms=T0, final_metadata=lambda task: None
    )
    assert [e.kind for e in unchanged.events] == ["status"]
    done, _ = task_in(TaskState.COMPLETED)
    refused = client.cancel_task(
        done, tenant="acme", task_id="t-1", now_ms=T0, final_metadata=final
    )
    assert_refused(refused, "not-cancelable")
    assert len(asked) == 1


def test_cancel_refusals() -> None:
    record, _ = new_task()
    assert_refused(client.cancel_task(None, tenant="acme", task_id="t", now_ms=T0), "not-found")
    other = client.cancel_task(record, tenant="globex", task_id="t-1", now_ms=T0)
    assert_refused(other, "other-tenant")
    assert other.error is not None
    assert other.error.kind is ErrorKind.TASK_NOT_FOUND
    now = client.cancel_task(record, tenant="acme", task_id="t-1", now_ms=T0, cancelable_now=False)
    assert_refused(now, "not-cancelable-now")
    assert now.error is not None
    assert now.error.kind is ErrorKind.TASK_NOT_CANCELABLE


@pytest.mark.parametrize("state", TERMINAL)
def test_not_cancelable_in_a_terminal_state_canceled_included(state: TaskState) -> None:
    record, _ = task_in(state)
    outcome = client.cancel_task(record, tenant="acme", task_id="t-1", now_ms=T0 + 9)
    assert_refused(outcome, "not-cancelable")
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.TASK_NOT_CANCELABLE
    # The lifecycle answer wins over the agent's: terminal is never "not now".
    later = client.cancel_task(
        record, tenant="acme", task_id="t-1", now_ms=T0, cancelable_now=False
    )
    assert later.name == "not-cancelable"


# --- SubscribeToTask -----------------------------------------------------------------------


def test_subscribe_outcomes() -> None:
    record, _ = task_in(TaskState.INPUT_REQUIRED)
    subscribed = client.subscribe(record, tenant="acme", task_id="t-1")
    assert (subscribed.name, subscribed.record, subscribed.events) == ("subscribed", record, [])
    assert_refused(client.subscribe(None, tenant="acme", task_id="t-1"), "not-found")
    assert_refused(client.subscribe(record, tenant="globex", task_id="t-1"), "other-tenant")
    off = client.subscribe(record, tenant="acme", task_id="t-1", streaming=False)
    assert_refused(off, "streaming-not-supported")
    assert off.error is not None
    assert off.error.kind is ErrorKind.UNSUPPORTED_OPERATION


@pytest.mark.parametrize("state", TERMINAL)
def test_subscribe_to_a_terminal_task(state: TaskState) -> None:
    record, _ = task_in(state)
    outcome = client.subscribe(record, tenant="acme", task_id="t-1")
    assert_refused(outcome, "task-terminal")
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.UNSUPPORTED_OPERATION


# --- push-notification configs -------------------------------------------------------------


def _config(config_id: str = "", url: str = "https://hook.example/a") -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(
        url=url,
        id=config_id,
        task_id="t-1",
        token="tok",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="secret"),
    )


def _create(
    config: TaskPushNotificationConfig,
    existing: list[PushConfigRecord],
    *,
    record: TaskRecord | None = None,
    tenant: str = "acme",
    limits: Limits = UNLIMITED,
    push_supported: bool = True,
) -> Outcome:
    return client.create_push_config(
        record or new_task()[0],
        config,
        tenant=tenant,
        existing=existing,
        new_id="gen-1",
        now_ms=T0,
        limits=limits,
        push_supported=push_supported,
    )


def test_push_config_created_with_the_clients_id() -> None:
    outcome = _create(_config("mine"), [])
    assert outcome.name == "created"
    assert outcome.error is None
    assert outcome.events == []
    assert outcome.config is not None
    stored = outcome.config.config
    assert (stored.id, stored.task_id, stored.tenant, stored.url) == (
        "mine",
        "t-1",
        "acme",
        "https://hook.example/a",
    )
    assert (outcome.config.tenant, outcome.config.created_ms) == ("acme", T0)
    assert outcome.configs == [stored]
    assert outcome.published == [
        Published(
            "a2a.tasks.PushNotificationConfigCreated",
            {"row": "t-1/mine", "config_id": "mine", "task_id": "t-1"},
        )
    ]


def test_push_config_assigned_an_id_by_the_server() -> None:
    outcome = _create(_config(""), [])
    assert outcome.name == "assigned"
    assert outcome.config is not None
    assert outcome.config.config.id == "gen-1"
    assert outcome.published[0].payload["config_id"] == "gen-1"


def test_push_config_same_id_replaces_even_at_the_limit() -> None:
    first = _create(_config("a"), [])
    assert first.config is not None
    limits = Limits(push_configs_per_task=1)
    again = _create(_config("a", url="https://hook.example/b"), [first.config], limits=limits)
    assert again.name == "created"
    assert again.config is not None
    assert again.config.config.url == "https://hook.example/b"
    over = _create(_config("b"), [first.config], limits=limits)
    assert_refused(over, "config-limit")
    assert over.error is not None
    assert over.error.kind is ErrorKind.RESOURCE_EXHAUSTED
    assert_refused(_create(_config(""), [first.config], limits=limits), "config-limit")


def test_push_config_create_refusals() -> None:
    record, _ = new_task(tenant="acme")
    missing = client.create_push_config(
        None, _config(), tenant="acme", existing=[], new_id="g", now_ms=T0, limits=UNLIMITED
    )
    assert_refused(missing, "task-not-found")
    other = _create(_config(), [], record=record, tenant="globex")
    assert_refused(other, "task-not-found")
    off = _create(_config(), [], push_supported=False)
    assert_refused(off, "push-not-supported")
    assert off.error is not None
    assert off.error.kind is ErrorKind.PUSH_NOT_SUPPORTED


def test_get_push_config_outcomes() -> None:
    record, _ = new_task()
    created = _create(_config("a"), [], record=record).config
    assert created is not None

    def get(
        config: PushConfigRecord | None,
        *,
        tenant: str = "acme",
        config_id: str = "a",
        push_supported: bool = True,
    ) -> Outcome:
        return client.get_push_config(
            record,
            config,
            tenant=tenant,
            task_id="t-1",
            config_id=config_id,
            push_supported=push_supported,
        )

    found = get(created)
    assert (found.name, found.config, found.configs) == ("found", created, [created.config])
    assert_refused(get(None), "config-not-found")
    assert_refused(get(created, config_id="b"), "config-not-found")
    assert_refused(get(created, tenant="globex"), "not-found")
    assert_refused(
        client.get_push_config(None, None, tenant="acme", task_id="t-1", config_id="a"),
        "not-found",
    )
    assert_refused(get(created, push_supported=False), "push-not-supported")


def test_list_push_configs_outcomes() -> None:
    record, _ = new_task()
    a = _create(_config("a"), [], record=record).config
    b = _create(_config("b"), [], record=record).config
    assert a is not None and b is not None
    listed = client.list_push_configs(record, [a, b], tenant="acme", task_id="t-1")
    assert (listed.name, listed.configs) == ("listed", [a.config, b.config])
    assert client.list_push_configs(record, [], tenant="acme", task_id="t-1").configs == []
    assert_refused(
        client.list_push_configs(None, [], tenant="acme", task_id="t-1"), "task-not-found"
    )
    assert_refused(
        client.list_push_configs(record, [a], tenant="globex", task_id="t-1"), "other-tenant"
    )
    assert_refused(
        client.list_push_configs(record, [a], tenant="acme", task_id="t-1", push_supported=False),
        "push-not-supported",
    )


def test_delete_push_config_is_idempotent() -> None:
    record, _ = new_task()
    outcomes = [
        client.delete_push_config(record, tenant="acme", task_id="t-1", config_id="a")
        for _ in range(2)
    ]
    for outcome in outcomes:
        assert outcome.name == "deleted"
        assert outcome.error is None
        assert outcome.events == []
        assert outcome.published == [
            Published(
                "a2a.tasks.PushNotificationConfigDeleted", {"config_id": "a", "task_id": "t-1"}
            )
        ]
    assert_refused(
        client.delete_push_config(None, tenant="acme", task_id="t-1", config_id="a"),
        "task-not-found",
    )
    assert_refused(
        client.delete_push_config(record, tenant="globex", task_id="t-1", config_id="a"),
        "task-not-found",
    )
    assert_refused(
        client.delete_push_config(
            record, tenant="acme", task_id="t-1", config_id="a", push_supported=False
        ),
        "push-not-supported",
    )


# --- GetExtendedAgentCard ------------------------------------------------------------------


def test_extended_card_outcomes() -> None:
    assert client.get_extended_card(declared=True, configured=True).name == "returned"
    assert client.get_extended_card(declared=True, configured=True).error is None
    not_supported = client.get_extended_card(declared=False, configured=True)
    assert_refused(not_supported, "not-supported")
    assert not_supported.error is not None
    assert not_supported.error.kind is ErrorKind.UNSUPPORTED_OPERATION
    assert_refused(client.get_extended_card(declared=False, configured=False), "not-supported")
    not_configured = client.get_extended_card(declared=True, configured=False)
    assert_refused(not_configured, "not-configured")
    assert not_configured.error is not None
    assert not_configured.error.kind is ErrorKind.EXTENDED_CARD_NOT_CONFIGURED


# --- SendStreamingMessage ------------------------------------------------------------------


def test_streaming_not_supported() -> None:
    outcome = send(send_request(), streaming=True, streaming_supported=False)
    assert_refused(outcome, "streaming-not-supported")
    assert outcome.error is not None
    assert outcome.error.kind is ErrorKind.UNSUPPORTED_OPERATION
    # Plain SendMessage does not need the capability.
    accepted(send(send_request(), streaming_supported=False), "task-created")


def test_streaming_task_created_also_publishes_the_first_stream_response() -> None:
    outcome = send(send_request(), streaming=True)
    record = accepted(outcome, "task-created")
    assert [p.event for p in outcome.published] == [
        "a2a.tasks.TaskCreated",
        "a2a.tasks.MessageStreamResponse",
    ]
    assert outcome.published[1].payload == {"task": to_builtins(record.task)}


def test_streaming_continued_publishes_the_task_in_the_state_it_holds() -> None:
    record, _ = task_in(TaskState.INPUT_REQUIRED)
    outcome = send(send_request(user_message(task_id="t-1")), record, streaming=True)
    new = accepted(outcome, "continued")
    assert outcome.published == [
        Published("a2a.tasks.MessageStreamResponse", {"task": to_builtins(new.task)})
    ]
    assert outcome.published[0].payload["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


def test_streaming_direct_message_publishes_the_message() -> None:
    reply = Message(message_id="r-1", role=Role.AGENT, parts=[Part(text="hi")])
    outcome = client.direct_message(reply, send_request(), "c-gen", streaming=True)
    assert outcome.message is not None
    assert outcome.published == [
        Published("a2a.tasks.MessageStreamResponse", {"message": to_builtins(outcome.message)})
    ]
