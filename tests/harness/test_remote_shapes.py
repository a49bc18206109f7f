"""Sub-tasks on another agent, and the shapes of what the harness emits about them: a harness
here (in this process, its log checked event by event) delegates to a harness on B (``accord
serve``, API keys on), whose task waits for a sub-task of its own there (``awaiting-subtasks``,
its own status); the stand-in here keeps that sub-state as the remote task's, and the parent's
reference to the stand-in says INPUT_REQUIRED without a sub-state, which tiny-harness's
clients know no other way. Every task extension here, and B's task as GetTask returns it, fits
tiny-harness's shapes (tests/harness/tiny_harness_shapes.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.harness.channel_kit import FAST
from tests.harness.delegation_kit import Scripts, read, spawn
from tests.harness.delegation_proc import A_AT_B, b_config, rpc
from tests.harness.engine_kit import ALICE, brief, send
from tests.harness.engine_kit import extension as extension_of
from tests.harness.harness_proc import start
from tests.harness.tiny_harness_shapes import TASK_KEY, check_metadata, check_store
from tests.waiting import until

from accord.engine import Engine
from accord.harness import HarnessAgent, HarnessSettings
from accord.harness._roster import Credentials, RosterAgent
from accord.harness.models import FunctionModel
from accord.store._memory import MemoryStore

pytestmark = pytest.mark.processes

REMOTE_KEY = "accord.harness/subtask"
B_AS_A = {"X-API-Key": A_AT_B}
# B's task (A's sub-task there) hands a part to its reporter (A itself): it waits for it.
B_SCRIPT = [
    {
        "text": "",
        "tool_calls": [
            {
                "name": "create_task_for_participant",
                "arguments": {"participant_id": "accord-a", "name": "part", "goal": "a part"},
            }
        ],
    },
    {"text": "Waiting for my part."},
]


async def test_a_remote_child_waiting_for_its_own_sub_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = start(tmp_path, f"sqlite:///{tmp_path / 'b.db'}", b_config(tmp_path, B_SCRIPT), name="b")
    monkeypatch.setenv("B_KEY", A_AT_B)
    model = Scripts(root=[[spawn("venues", "find venues", agent="b")], "B is on it."])
    settings = HarnessSettings(
        agent_id="accord-a",
        model="main",
        agents=(RosterAgent("b", b.url, Credentials("api_key", "B_KEY")),),
        delivery=FAST,
    )
    agent = HarnessAgent(settings, {"main": FunctionModel(model)})
    engine = Engine(MemoryStore(), agent)
    agent.attach_engine(engine)
    await engine.start()
    try:
        parent = await send(engine, ALICE, brief({}, "plan"))
        child_id = f"{parent.id}.1"

        async def remote() -> Any:
            child = await read(engine, child_id)
            info = child.metadata.get(REMOTE_KEY, {}).get("remote", {})
            return info if info.get("sub_state") == "awaiting-subtasks" else None

        there = await until(remote, "the remote task waiting for its own sub-task")

        async def reference() -> Any:
            refs = extension_of(await read(engine, parent.id))["sub_tasks"]
            seen = [(r["task_id"], r["agent"]["id"], r["state"], r["sub_state"]) for r in refs]
            return seen if seen == [(child_id, "b", "INPUT_REQUIRED", None)] else None

        await until(reference, "the parent's reference to its remote child")
        assert await check_store(engine.store) >= 4
        b_task = rpc(f"{b.url}/", "GetTask", {"id": there["task_id"]}, B_AS_A)
        assert b_task["metadata"]["io.github.madarauchiha-314.tiny-harness/status"] == {
            "sub_state": "awaiting-subtasks"
        }
        check_metadata(b_task["metadata"], "B's task")
        [b_ref] = b_task["metadata"][TASK_KEY]["sub_tasks"]
        assert b_ref["state"] == "INPUT_REQUIRED"
        assert b_ref["sub_state"] == "awaiting-next-message"
    finally:
        await engine.stop()
        b.stop()
