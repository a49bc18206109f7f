"""Random sequences of client and agent commands over several tasks and tenants.

The machine keeps every task's log and snapshot, as a store would, and a small independent
oracle of what each command must answer. After every step it checks: the outcome is the
oracle's; an accepted command appends exactly its declared events (a new task one ``task``
event, a continuation one ``message``, a move or cancel one ``status``, an artifact one
``artifact``); a refused one carries nothing and changes nothing; terminal tasks never change;
sequence numbers are 1..n without gaps; and folding the log gives the snapshot. Push-config
commands run alongside against their own store: they append no events, honour the per-task
limit (a same-id create replaces) and never cross tenants.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    precondition,
    rule,
)

from accord.core import Limits, Outcome, PushConfigRecord, TaskRecord, agent, client, lifecycle
from accord.core._events import Event, fold
from accord.wire._codec import encode
from accord.wire._model import (
    Artifact,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskPushNotificationConfig,
    TaskState,
)

TENANTS = ["acme", "globex", ""]
TASK_LIMIT = 4
MESSAGE_LIMIT = 2
CONFIG_LIMIT = 2
LIMITS = Limits(
    tasks_per_tenant=TASK_LIMIT,
    messages_per_task=MESSAGE_LIMIT,
    push_configs_per_task=CONFIG_LIMIT,
)
DECLARED_KIND = {
    "task-created": "task",
    "continued": "message",
    "moved": "status",
    "canceled": "status",
    "updated": "artifact",
}


@dataclass
class Expected:
    """The oracle's view of one task: what the core must agree with."""

    tenant: str
    context_id: str
    state: TaskState = TaskState.SUBMITTED
    history: int = 1


def _message(text: str, *, task_id: str = "", context_id: str = "") -> Message:
    return Message(
        message_id=f"m-{text}",
        role=Role.USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


class TaskLifecycle(RuleBasedStateMachine):
    tasks = Bundle("tasks")

    @initialize()
    def start(self) -> None:
        self.records: dict[str, TaskRecord] = {}
        self.logs: dict[str, list[Event]] = {}
        self.expected: dict[str, Expected] = {}
        self.configs: dict[str, dict[str, PushConfigRecord]] = {}
        self.now = 1_700_000_000_000
        self.counter = 0

    # --- helpers ---------------------------------------------------------------------------

    def tick(self) -> int:
        self.now += 1
        return self.now

    def count(self, tenant: str) -> int:
        return sum(1 for e in self.expected.values() if e.tenant == tenant)

    def commit(self, task_id: str, outcome: Outcome, expected_name: str) -> None:
        """Check ``outcome`` against the oracle's name and store what it decided."""
        assert outcome.name == expected_name, (outcome.name, expected_name, outcome.error)
        before = self.records.get(task_id)
        snapshot = encode(before.task) if before else b""
        if expected_name not in DECLARED_KIND:
            assert outcome.error is not None
            assert outcome.events == []
            assert outcome.record is None
            assert outcome.published == []
            if before is not None:
                assert encode(before.task) == snapshot  # the input was not touched
            return
        assert outcome.error is None
        assert outcome.record is not None
        (event,) = outcome.events
        assert event.kind == DECLARED_KIND[expected_name]
        assert event.task_id == task_id
        if before is not None:
            assert not lifecycle.is_terminal(before.state), "a terminal task changed"
            assert encode(before.task) == snapshot
        self.logs.setdefault(task_id, []).append(event)
        self.records[task_id] = outcome.record

    # --- client commands -------------------------------------------------------------------

    @rule(
        target=tasks,
        tenant=st.sampled_from(TENANTS),
        own_context=st.booleans(),
        accept_context=st.booleans(),
    )
    def send_new(self, tenant: str, own_context: bool, accept_context: bool) -> str:
        self.counter += 1
        task_id = f"t-{self.counter}"
        context = f"c-client-{self.counter}" if own_context else ""
        outcome = client.send_message(
            SendMessageRequest(message=_message(str(self.counter), context_id=context)),
            tenant=tenant,
            task=None,
            tenant_task_count=self.count(tenant),
            now_ms=self.tick(),
            new_task_id=task_id,
            new_context_id=f"c-gen-{self.counter}",
            limits=LIMITS,
            accept_client_context_ids=accept_context,
        )
        if own_context and not accept_context:
            expected = "context-not-accepted"
        elif self.count(tenant) >= TASK_LIMIT:
            expected = "task-limit"
        else:
            expected = "task-created"
        self.commit(task_id, outcome, expected)
        if expected == "task-created":
            assert outcome.record is not None
            assert outcome.record.state is TaskState.SUBMITTED
            self.expected[task_id] = Expected(tenant, outcome.record.task.context_id)
            assert outcome.record.task.context_id == (context or f"c-gen-{self.counter}")
        return task_id

    @rule(
        task_id=tasks,
        tenant=st.sampled_from(TENANTS),
        context=st.sampled_from(["none", "own", "other"]),
    )
    def send_continue(self, task_id: str, tenant: str, context: str) -> None:
        oracle = self.expected.get(task_id)
        own = oracle.context_id if oracle else ""
        context_id = {"none": "", "own": own, "other": "c-elsewhere"}[context]
        self.counter += 1
        message = _message(str(self.counter), task_id=task_id, context_id=context_id)
        outcome = client.send_message(
            SendMessageRequest(message=message),
            tenant=tenant,
            task=self.records.get(task_id),
            tenant_task_count=self.count(tenant),
            now_ms=self.tick(),
            new_task_id="unused",
            new_context_id="unused",
            limits=LIMITS,
        )
        if oracle is None or oracle.tenant != tenant:
            expected = "task-not-found"
        elif lifecycle.is_terminal(oracle.state):
            expected = "task-terminal"
        elif context_id and context_id != oracle.context_id:
            expected = "context-mismatch"
        elif oracle.history >= MESSAGE_LIMIT:
            expected = "history-limit"
        else:
            expected = "continued"
            oracle.history += 1
        self.commit(task_id, outcome, expected)

    @rule(task_id=tasks, tenant=st.sampled_from(TENANTS), cancelable_now=st.booleans())
    def cancel(self, task_id: str, tenant: str, cancelable_now: bool) -> None:
        oracle = self.expected.get(task_id)
        outcome = client.cancel_task(
            self.records.get(task_id),
            tenant=tenant,
            task_id=task_id,
            now_ms=self.tick(),
            cancelable_now=cancelable_now,
        )
        if oracle is None:
            expected = "not-found"
        elif oracle.tenant != tenant:
            expected = "other-tenant"
        elif lifecycle.is_terminal(oracle.state):
            expected = "not-cancelable"
        elif not cancelable_now:
            expected = "not-cancelable-now"
        else:
            expected = "canceled"
            oracle.state = TaskState.CANCELED
        self.commit(task_id, outcome, expected)
        if expected == "canceled":
            assert self.records[task_id].state is TaskState.CANCELED

    @rule(task_id=tasks, tenant=st.sampled_from(TENANTS))
    def read(self, task_id: str, tenant: str) -> None:
        oracle = self.expected.get(task_id)
        record = self.records.get(task_id)
        got = client.get_task(record, tenant=tenant, task_id=task_id)
        sub = client.subscribe(record, tenant=tenant, task_id=task_id)
        if oracle is None:
            assert (got.name, sub.name) == ("not-found", "not-found")
        elif oracle.tenant != tenant:
            assert (got.name, sub.name) == ("other-tenant", "other-tenant")
        else:
            assert got.name == "found"
            assert got.record is record
            terminal = lifecycle.is_terminal(oracle.state)
            assert sub.name == ("task-terminal" if terminal else "subscribed")
        assert got.events == [] and sub.events == []

    # --- push-notification configs (no events; their own store) ----------------------------

    def visible(self, task_id: str, tenant: str) -> bool:
        oracle = self.expected.get(task_id)
        return oracle is not None and oracle.tenant == tenant

    @rule(
        task_id=tasks,
        tenant=st.sampled_from(TENANTS),
        config_id=st.sampled_from(["", "h1", "h2", "h3"]),
    )
    def create_config(self, task_id: str, tenant: str, config_id: str) -> None:
        self.counter += 1
        existing = self.configs.setdefault(task_id, {})
        outcome = client.create_push_config(
            self.records.get(task_id),
            TaskPushNotificationConfig(url="https://hook.example/", id=config_id, task_id=task_id),
            tenant=tenant,
            existing=list(existing.values()),
            new_id=f"gen-{self.counter}",
            now_ms=self.tick(),
            limits=LIMITS,
        )
        final_id = config_id or f"gen-{self.counter}"
        if not self.visible(task_id, tenant):
            expected = "task-not-found"
        elif final_id not in existing and len(existing) >= CONFIG_LIMIT:
            expected = "config-limit"
        else:
            expected = "created" if config_id else "assigned"
        assert outcome.name == expected, (outcome.name, expected)
        assert outcome.events == []
        if expected in ("created", "assigned"):
            assert outcome.config is not None
            assert outcome.config.config.id == final_id
            assert outcome.config.config.task_id == task_id
            assert outcome.config.tenant == tenant
            existing[final_id] = outcome.config
        else:
            assert outcome.error is not None
            assert (outcome.config, outcome.published) == (None, [])

    @rule(
        task_id=tasks,
        tenant=st.sampled_from(TENANTS),
        config_id=st.sampled_from(["h1", "h2", "gen-1"]),
    )
    def read_and_delete_config(self, task_id: str, tenant: str, config_id: str) -> None:
        record = self.records.get(task_id)
        existing = self.configs.setdefault(task_id, {})
        got = client.get_push_config(
            record, existing.get(config_id), tenant=tenant, task_id=task_id, config_id=config_id
        )
        listed = client.list_push_configs(
            record, list(existing.values()), tenant=tenant, task_id=task_id
        )
        deleted = client.delete_push_config(
            record, tenant=tenant, task_id=task_id, config_id=config_id
        )
        if not self.visible(task_id, tenant):
            assert got.name == "not-found"
            assert listed.name == ("task-not-found" if record is None else "other-tenant")
            assert deleted.name == "task-not-found"
            return
        assert got.name == ("found" if config_id in existing else "config-not-found")
        assert listed.name == "listed"
        assert [c.id for c in listed.configs] == list(existing)
        assert deleted.name == "deleted"
        existing.pop(config_id, None)

    # --- agent commands --------------------------------------------------------------------

    @rule(task_id=tasks, move=st.sampled_from(agent.AGENT_MOVES), with_message=st.booleans())
    def agent_move(self, task_id: str, move: str, with_message: bool) -> None:
        oracle = self.expected.get(task_id)
        note = _message("status") if with_message else None
        outcome = agent.move(self.records.get(task_id), move, self.tick(), note, task_id)
        target = lifecycle.MOVES[move]
        if oracle is None:
            expected = "not-found"
        elif oracle.state in target.sources:
            expected = "moved"
        else:
            expected = "wrong-state"
        self.commit(task_id, outcome, expected)
        if expected == "wrong-state":
            assert oracle is not None
            assert outcome.payload is not None
            assert outcome.payload["state"].lower() == oracle.state.name.replace("_", "").lower()
        if expected == "moved":
            assert oracle is not None
            oracle.state = target.to  # the lifecycle table's target, nothing else
            oracle.history += 1 if with_message else 0
            assert self.records[task_id].state is target.to

    @rule(
        task_id=tasks,
        artifact_id=st.sampled_from(["a", "b"]),
        append=st.booleans(),
        last_chunk=st.booleans(),
    )
    def update_artifact(
        self, task_id: str, artifact_id: str, append: bool, last_chunk: bool
    ) -> None:
        oracle = self.expected.get(task_id)
        before = self.records.get(task_id)
        artifact = Artifact(artifact_id=artifact_id, parts=[Part(text=str(self.tick()))])
        outcome = agent.update_artifact(
            before, artifact, self.now, append_parts=append, last_chunk=last_chunk, task_id=task_id
        )
        if oracle is None:
            expected = "not-found"
        elif lifecycle.is_terminal(oracle.state):
            expected = "wrong-state"
        else:
            expected = "updated"
        self.commit(task_id, outcome, expected)
        if expected == "updated":
            assert before is not None
            after = self.records[task_id]
            assert after.state is before.state
            old = {a.artifact_id: a for a in before.task.artifacts}
            new = {a.artifact_id: a for a in after.task.artifacts}
            if append and artifact_id in old:
                assert new[artifact_id].parts == [*old[artifact_id].parts, *artifact.parts]
            else:
                assert new[artifact_id] == artifact

    @precondition(lambda self: self.counter > 0)
    @rule(task_id=consumes(tasks))
    def forget(self, task_id: str) -> None:
        """Drop a task id from the pool so later steps mix fresh and old tasks."""

    @rule()
    def unknown_task(self) -> None:
        outcome = agent.move(None, "work", self.tick(), None, "t-none")
        assert outcome.name == "not-found"
        assert outcome.events == []

    # --- invariants ------------------------------------------------------------------------

    @invariant()
    def logs_fold_to_snapshots(self) -> None:
        for task_id, record in self.records.items():
            log = self.logs[task_id]
            assert [e.seq for e in log] == list(range(1, len(log) + 1))
            assert log[0].kind == "task"
            assert record.seq == len(log)
            assert fold(log) == record.task

    @invariant()
    def snapshots_agree_with_the_oracle(self) -> None:
        assert set(self.records) == set(self.expected)
        for task_id, oracle in self.expected.items():
            record = self.records[task_id]
            assert record.state is oracle.state
            assert record.tenant == oracle.tenant
            assert record.task.context_id == oracle.context_id
            assert len(record.task.history) == oracle.history
        for tenant in TENANTS:
            assert self.count(tenant) <= TASK_LIMIT
        for task_id, configs in self.configs.items():
            assert len(configs) <= CONFIG_LIMIT
            assert all(c.tenant == self.expected[task_id].tenant for c in configs.values())


TaskLifecycle.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
test_task_lifecycle = TaskLifecycle.TestCase
