"""Commands on the engine: answered in the task's unchanged state without the model, their
changes events of the task's log, arguments checked, the role policy, /sub-task children,
commands registered in code, and the registry frozen before the harness serves."""

from __future__ import annotations

import asyncio

import pytest
from tests.harness.engine_kit import (
    ALICE,
    BOB,
    CAROL,
    CONTROL,
    Recorder,
    brief,
    extension,
    replaced,
    running,
    said,
    said_metadata,
    send,
    sub_state,
)
from tests.waiting import until

from accord.harness import Conversation, HarnessAgent
from accord.harness._wire import COMMANDS_URI, TASK_KEY
from accord.harness.commands import Argument, CommandSpec
from accord.harness.hooks import (
    CommandInvoked,
    CommandResult,
    CommandSettings,
    FrozenError,
    FunctionExecutor,
    TaskComplete,
)
from accord.store._memory import MemoryStore
from accord.wire import A2AError, ErrorKind
from accord.wire._model import Part, TaskState


async def test_a_command_is_answered_in_the_unchanged_state_and_never_reaches_the_model() -> None:
    model = Recorder()
    store = MemoryStore()
    async with running(store, model) as (engine, _):
        task = await send(engine, ALICE, "hello")
        events = len(await store.read_events(task.id, 0))
        status = await send(engine, ALICE, "/status", task.id)
        assert status.status.state is TaskState.INPUT_REQUIRED
        assert sub_state(status) == "awaiting-next-message"
        assert said_metadata(status) == {"command": "status"}
        assert said(status).startswith(f"Task {task.id} · hello\nState: INPUT_REQUIRED")
        # The log: the command message, then the reply (a status update, same state).
        logged = (await store.read_events(task.id, 0))[events:]
        assert [e.kind for e in logged] == ["message", "status"]
        reply = logged[1].body.status
        assert reply.state is TaskState.INPUT_REQUIRED
        assert reply.message.message_id == f"{task.id}:command:{logged[1].seq}"
        assert len(model.seen) == 1
        # The next turn's model sees neither the command nor its reply.
        await send(engine, ALICE, "go on", task.id)
        assert model.last_users == ["hello", "go on"]
        assert [e.text for e in model.seen[-1].entries if e.role == "agent"] == ["main: hello"]


async def test_anything_but_a_registered_command_reaches_the_model() -> None:
    model = Recorder()
    async with running(model=model) as (engine, _):
        task = await send(engine, ALICE, "/x do it")
        assert said(task) == "main: /x do it"
        two_parts = await send(engine, ALICE, [Part(text="/status"), Part(text="too")], task.id)
        assert said(two_parts).startswith("main: ")
        assert model.last_users[-1] == "/status\ntoo"
        shouting = await send(engine, ALICE, "/Status", task.id)
        assert said(shouting) == "main: /x do it | /status\ntoo | /Status"


async def test_model_and_effort_are_set_from_the_allowlist_as_events_of_the_log() -> None:
    model = Recorder()
    store = MemoryStore()
    async with running(store, model, models=("other",)) as (engine, _):
        task = await send(engine, ALICE, "hello")
        shown = await send(engine, ALICE, "/model", task.id)
        assert said(shown) == "Model: main (default)\nSelectable: main, other"
        before = len(await store.read_events(task.id, 0))
        refused = await send(engine, ALICE, "/model gpt-9", task.id)
        assert said(refused) == "/model: name must be one of main, other"
        assert extension(refused)["model"] is None
        # Refused: the message and the reply, nothing else.
        assert [e.kind for e in (await store.read_events(task.id, 0))[before:]] == [
            "message",
            "status",
        ]
        chosen = await send(engine, ALICE, "/model other", task.id)
        assert said(chosen) == "Model set to other."
        assert extension(chosen)["model"] == "other"
        effort = await send(engine, ALICE, "/effort high", task.id)
        assert extension(effort)["reasoning_effort"] == "high"
        bad = await send(engine, ALICE, "/effort extreme", task.id)
        assert said(bad) == "/effort: level must be one of low, medium, high"
        assert extension(bad)["reasoning_effort"] == "high"
        # Each change is a task snapshot right after its reply; the next turn runs on it.
        kinds = [(e.kind, e.body) for e in (await store.read_events(task.id, 0))[before:]]
        snapshots = [body for kind, body in kinds if kind == "task"]
        assert [s.metadata[TASK_KEY]["model"] for s in snapshots] == ["other", "other"]
        assert [s.metadata[TASK_KEY]["reasoning_effort"] for s in snapshots] == [None, "high"]
        answer = await send(engine, ALICE, "and now?", task.id)
        assert said(answer).startswith("other: ")
        assert model.seen[-1].reasoning_effort == "high"
        status = await send(engine, ALICE, "/status", task.id)
        assert "\nModel: other\nEffort: high\n" in said(status)


async def test_declared_arguments_are_checked_before_the_command_runs() -> None:
    ran: list[dict[str, object]] = []

    def deploy(context: CommandInvoked) -> str:
        ran.append(context.args)
        return f"deploying {context.args}"

    spec = CommandSpec(
        "deploy",
        "Deploy a build",
        arguments=(
            Argument("env", choices=("dev", "prod"), required=True),
            Argument("replicas", type="integer"),
            Argument("note", rest=True),
        ),
        changes="never",
    )

    def setup(agent: HarnessAgent) -> None:
        agent.commands.register(spec, deploy)

    async with running(setup=setup) as (engine, _):
        task = await send(engine, ALICE, "hello")
        cases = {
            "/deploy": "/deploy: env is missing (usage: /deploy dev|prod [<replicas>] [<note>])",
            "/deploy staging": "/deploy: env must be one of dev, prod",
            "/deploy dev many": "/deploy: replicas must be an integer",
        }
        for text, reply in cases.items():
            answered = await send(engine, ALICE, text, task.id)
            assert said(answered) == reply
            assert said_metadata(answered) == {"command": "deploy"}
        assert ran == []
        ok = await send(engine, ALICE, "/deploy prod 3 after\nlunch", task.id)
        assert ran == [{"env": "prod", "replicas": 3, "note": "after\nlunch"}]
        assert said(ok) == "deploying {'env': 'prod', 'replicas': 3, 'note': 'after\\nlunch'}"
        extra = await send(engine, ALICE, "/status now", task.id)
        assert said(extra) == "/status takes no arguments (usage: /status)"


async def test_a_watcher_runs_only_commands_that_read_the_task() -> None:
    async with running() as (engine, _):
        task = await send(engine, ALICE, brief({"bob": "watcher"}))
        status = await send(engine, BOB, "/status", task.id)
        assert "Participants: alice (reporter), bob (watcher), accord (assignee)" in said(status)
        assert said(await send(engine, BOB, "/model", task.id)).startswith("Model: main")
        refused = await send(engine, BOB, "/model other", task.id)
        assert said(refused) == (
            "refused: a watcher may only run commands that read the task, "
            "not /model with an argument"
        )
        assert refused.status.state is TaskState.INPUT_REQUIRED
        assert extension(refused)["model"] is None
        spawned = await send(engine, BOB, "/sub-task spy", task.id)
        assert said(spawned).startswith("refused: a watcher may only run")
        assert extension(spawned)["sub_tasks"] == []
        listed = said(await send(engine, BOB, "/help", task.id)).splitlines()
        assert [line.split(" ")[0] for line in listed[1:]] == [
            "/model",
            "/effort",
            "/status",
            "/help",
        ]
        everything = said(await send(engine, ALICE, "/help", task.id)).splitlines()
        assert "/sub-task <description> — Start a linked sub-task" in everything
        # A stranger's command is refused like any message of theirs: the task is unknown.
        with pytest.raises(A2AError) as stranger:
            await send(engine, CAROL, "/status", task.id)
        assert stranger.value.kind is ErrorKind.TASK_NOT_FOUND


async def test_sub_task_opens_a_child_conversation_waiting_for_its_first_message() -> None:
    model = Recorder()
    async with running(model=model) as (engine, _):
        parent = await send(engine, ALICE, brief({"bob": "watcher"}))
        answered = await send(engine, ALICE, "/sub-task book the venue\nby Friday", parent.id)
        child_id = said_metadata(answered)["task_ref"]
        assert child_id == f"{parent.id}.1"  # (numbered as spawn_subtask's children)
        assert said_metadata(answered) == {"command": "sub-task", "task_ref": child_id}
        assert said(answered) == f"Starting a sub-task.\nCreated sub-task {child_id}."
        assert answered.status.state is TaskState.INPUT_REQUIRED
        assert extension(answered)["sub_tasks"] == [
            {"task_id": child_id, "agent": None, "state": "INPUT_REQUIRED",
             "sub_state": "awaiting-next-message"}
        ]  # fmt: skip
        child = await engine.get_task(child_id, ALICE)
        assert child.context_id == parent.context_id
        assert child.status.state is TaskState.INPUT_REQUIRED
        assert sub_state(child) == "awaiting-next-message"
        child_ext = extension(child)
        assert child_ext["name"] == "book the venue"
        assert child_ext["goal"] == "book the venue\nby Friday"
        assert child_ext["parent_tasks"] == [
            {"task_id": parent.id, "agent": None, "state": None, "sub_state": None}
        ]
        assert [(p["id"], p["role"]) for p in child_ext["participants"]] == [
            ("alice", "reporter"),
            ("accord", "assignee"),
        ]
        assert child.history == []
        # Only its participants see it: the parent's watcher is not one.
        with pytest.raises(A2AError) as hidden:
            await engine.get_task(child_id, BOB)
        assert hidden.value.kind is ErrorKind.TASK_NOT_FOUND
        calls = len(model.seen)
        # The parent cannot complete while the child is open …
        refused = await send(engine, ALICE, [CONTROL], parent.id)
        assert said(refused) == f"completion refused: unresolved sub-tasks: {child_id}"
        # … the child's first message starts its first turn; its completion frees the parent.
        first = await send(engine, ALICE, "which venue?", child_id)
        assert said(first) == "main: which venue?"
        assert len(model.seen) == calls + 1
        assert (await send(engine, ALICE, [CONTROL], child_id)).status.state is (
            TaskState.COMPLETED
        )
        done = await send(engine, ALICE, [CONTROL], parent.id)
        assert done.status.state is TaskState.COMPLETED
        assert said(done) == "completed by alice"


async def test_a_hook_overrides_the_unresolved_sub_task_rule() -> None:
    def setup(agent: HarnessAgent) -> None:
        def anyway(point: str, context: TaskComplete) -> TaskComplete | None:
            if context.requested_by == "carol":
                return replaced(context, result="complete")
            return None

        agent.hooks.register(
            FunctionExecutor("complete-anyway", anyway, points=["task.complete.in"])
        )

    async with running(setup=setup) as (engine, _):
        task = await send(engine, ALICE, brief({"carol": "admin"}))
        child = said_metadata(await send(engine, ALICE, "/sub-task x", task.id))["task_ref"]
        refused = await send(engine, ALICE, [CONTROL], task.id)
        assert said(refused) == f"completion refused: unresolved sub-tasks: {child}"
        done = await send(engine, CAROL, [CONTROL], task.id)
        assert done.status.state is TaskState.COMPLETED


async def test_a_command_as_a_conversations_first_message_parks_it() -> None:
    model = Recorder()
    async with running(model=model) as (engine, _):
        task = await send(engine, ALICE, "/effort low")
        assert task.status.state is TaskState.INPUT_REQUIRED
        assert sub_state(task) == "awaiting-next-message"
        assert said(task) == "Effort set to low."
        assert said_metadata(task) == {"command": "effort"}
        assert extension(task)["reasoning_effort"] == "low"
        assert extension(task)["participants"][0] == {
            "id": "alice", "kind": "human", "role": "reporter", "display_name": ""
        }  # fmt: skip
        assert model.seen == []
        first = await send(engine, ALICE, "hello", task.id)
        assert model.last_users == ["hello"]
        assert said(first) == "main: hello"


async def test_commands_from_code_replace_built_ins_and_are_listed_on_the_card() -> None:
    def setup(agent: HarnessAgent) -> None:
        agent.commands.register(
            CommandSpec("ping", "Answer pong", changes="never", arguments=()), lambda c: "pong"
        )

        def terse(point: str, context: CommandInvoked) -> CommandInvoked | None:
            if context.name != "status":
                return None
            return replaced(context, result=CommandResult(reply=f"{context.task.state}"))

        # Below the built-in body (1000): it answers first, the built-in skips.
        agent.hooks.register(FunctionExecutor("terse", terse, priority=10,
                                              points=["command.invoked.in"]))  # fmt: skip

    async with running(setup=setup) as (engine, agent):
        task = await send(engine, ALICE, "hello")
        assert said(await send(engine, ALICE, "/ping", task.id)) == "pong"
        assert said(await send(engine, ALICE, "/status", task.id)) == "INPUT_REQUIRED"
        [commands] = [e for e in agent.card_extensions() if e.uri == COMMANDS_URI]
        assert commands.required is False
        assert commands.params == {
            "commands": [
                {"name": "model", "description": "Show or choose this task's model",
                 "argument_hint": "[<model>]"},
                {"name": "effort", "description": "Show or set this task's reasoning effort",
                 "argument_hint": "[low|medium|high]"},
                {"name": "sub-task", "description": "Start a linked sub-task",
                 "argument_hint": "<description>"},
                {"name": "retry", "description": "Run again the turn the model failed",
                 "argument_hint": ""},
                {"name": "status", "description": "Show this task's status", "argument_hint": ""},
                {"name": "help", "description": "List the commands you may run",
                 "argument_hint": ""},
                {"name": "ping", "description": "Answer pong", "argument_hint": ""},
            ]
        }  # fmt: skip
        # Frozen once it serves: no more commands or hooks.
        with pytest.raises(FrozenError):
            agent.commands.register(CommandSpec("late", "too late"), lambda c: "no")
        with pytest.raises(FrozenError):
            agent.hooks.on("turn.started.pre")(lambda point, context: None)


async def test_a_failing_command_body_is_refused_naming_it_and_changes_nothing() -> None:
    def setup(agent: HarnessAgent) -> None:
        def broken(context: CommandInvoked) -> CommandResult:
            raise RuntimeError("secret detail")

        agent.commands.register(CommandSpec("broken", "Fails", arguments=()), broken)

    async with running(setup=setup) as (engine, _):
        task = await send(engine, ALICE, "hello")
        answered = await send(engine, ALICE, "/broken", task.id)
        assert said(answered) == "refused: hook 'command:broken' failed: RuntimeError"
        assert "secret" not in said(answered)
        assert answered.status.state is TaskState.INPUT_REQUIRED


async def test_a_result_asking_for_a_model_outside_the_allowlist_changes_nothing() -> None:
    def setup(agent: HarnessAgent) -> None:
        def sneaky(point: str, context: CommandInvoked) -> CommandInvoked:
            wanted = CommandSettings(model="gpt-9")
            return replaced(context, result=CommandResult(reply="done", settings=wanted))

        def malformed(point: str, context: CommandInvoked) -> CommandInvoked | None:
            if context.name != "effort":
                return None
            wrong = {"model": 7}
            return replaced(context, result=CommandResult(reply="x", settings=wrong))  # type: ignore[arg-type]

        agent.hooks.register(FunctionExecutor("sneaky", sneaky, points=["command.invoked.post"]))
        agent.hooks.register(
            FunctionExecutor("malformed", malformed, points=["command.invoked.in"])
        )

    async with running(setup=setup) as (engine, _):
        task = await send(engine, ALICE, "hello")
        answered = await send(engine, ALICE, "/model other", task.id)
        assert (
            said(answered) == "invalid: model 'gpt-9' is not selectable (selectable: main, other)"
        )
        assert extension(answered)["model"] is None
        broken = await send(engine, ALICE, "/effort low", task.id)
        assert said(broken).startswith("refused: hook 'malformed' failed: returned a malformed")
        assert broken.status.state is TaskState.INPUT_REQUIRED
        assert extension(broken)["reasoning_effort"] is None


async def test_a_command_sent_while_a_turn_runs_is_answered_at_once_and_the_turn_goes_on() -> None:
    release = asyncio.Event()
    seen: list[list[str]] = []

    async def slow(conversation: Conversation) -> str:
        seen.append([e.text for e in conversation.entries if e.role == "user"])
        if len(seen) == 2:
            await release.wait()
        return f"answer {len(seen)}"

    async with running(model=slow) as (engine, _):
        task = await send(engine, ALICE, "one")
        turn = asyncio.ensure_future(send(engine, ALICE, "two", task.id))
        await until(lambda: len(seen) == 2, "the second turn")
        status = await send(engine, ALICE, "/status", task.id)
        assert status.status.state is TaskState.WORKING
        assert said(status).splitlines()[1] == "State: WORKING"
        release.set()
        ended = await asyncio.wait_for(turn, 5)
        assert said(ended) == "answer 2"
        assert seen == [["one"], ["one", "two"]]  # the command never joined the turn
