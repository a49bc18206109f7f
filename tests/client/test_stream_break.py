"""A stream broken mid-task by the server still yields every event exactly once."""

from __future__ import annotations

import pytest
from breaking_server import BREAK_AFTER, BreakingAgent, serve
from client_events import describe

from accord.client import BearerToken, Client, ResumePolicy, StreamBrokenError, Timeouts
from accord.wire._model import AgentCard, AgentInterface, StreamResponse

FAST = ResumePolicy(max_attempts=3, initial_delay=0.01)

ALL_EVENTS = [
    "task:TASK_STATE_SUBMITTED",
    "status:TASK_STATE_WORKING",
    "chunk:a1:a",
    "append:a1:b",
    "append:a1:c",
    "status:TASK_STATE_COMPLETED",
]


def card(base: str, binding: str) -> AgentCard:
    url = f"{base}/rpc" if binding == "JSONRPC" else f"{base}/rest"
    return AgentCard(
        name="breaking",
        description="drops streams",
        version="1",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version="1.0")
        ],
    )


@pytest.fixture(params=["JSONRPC", "HTTP+JSON"])
def binding(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def run(
    mode: str, binding: str, policy: ResumePolicy = FAST
) -> tuple[list[str], BreakingAgent]:
    agent = BreakingAgent(mode)
    seen: list[StreamResponse] = []
    with serve(agent) as base:
        async with Client(card(base, binding), resume=policy) as client:
            async for event in client.stream("go"):
                seen.append(event)
    return [describe(e) for e in seen], agent


async def test_resumes_with_last_event_id(binding: str) -> None:
    events, agent = await run("ids", binding)
    assert events == ALL_EVENTS
    assert agent.subscribes == [str(BREAK_AFTER)]


async def test_resumes_again_when_the_resumed_stream_breaks_too(binding: str) -> None:
    events, agent = await run("ids_twice", binding)
    assert events == ALL_EVENTS
    assert agent.subscribes == [str(BREAK_AFTER), str(BREAK_AFTER + 1)]


async def test_a_clean_end_before_the_task_is_final_is_a_break(binding: str) -> None:
    events, agent = await run("clean_eof", binding)
    assert events == ALL_EVENTS
    assert agent.subscribes == [str(BREAK_AFTER)]


async def test_resubscribe_with_snapshot_fills_the_gap_once(binding: str) -> None:
    events, agent = await run("snapshot", binding)
    assert events == ALL_EVENTS
    assert agent.subscribes == [None]  # no ids were given, so none is sent back


async def test_resubscribe_to_a_server_that_replays_everything(binding: str) -> None:
    events, _ = await run("replay", binding)
    assert events == ALL_EVENTS


async def test_task_finished_while_away_is_read_with_get_task(binding: str) -> None:
    events, _ = await run("finished", binding)
    # the parts emitted while the client was away arrive as one append
    assert events == [*ALL_EVENTS[:BREAK_AFTER], "append:a1:b+c", "status:TASK_STATE_COMPLETED"]


async def test_a_silent_stream_times_out_and_resumes(binding: str) -> None:
    agent = BreakingAgent("stall")
    with serve(agent) as base:
        timeouts = Timeouts(stream_idle=0.3)
        async with Client(card(base, binding), resume=FAST, timeouts=timeouts) as client:
            events = [describe(e) async for e in client.stream("go")]
    assert events == ALL_EVENTS
    assert agent.subscribes == [str(BREAK_AFTER)]


async def test_reconnection_asks_the_credentials_provider_again(binding: str) -> None:
    issued = iter(f"token-{n}" for n in range(100))
    agent = BreakingAgent("ids")
    with serve(agent) as base:
        credentials = BearerToken(lambda: next(issued))
        async with Client(card(base, binding), resume=FAST, credentials=credentials) as client:
            events = [describe(e) async for e in client.stream("go")]
    assert events == ALL_EVENTS
    assert agent.authorizations == ["Bearer token-0", "Bearer token-1"]


async def test_without_resumption_the_break_is_raised(binding: str) -> None:
    agent = BreakingAgent("ids")
    seen: list[str] = []
    with serve(agent) as base:
        async with Client(card(base, binding), resume=ResumePolicy(max_attempts=0)) as client:
            with pytest.raises(StreamBrokenError):
                async for event in client.stream("go"):
                    seen.append(describe(event))
    assert seen == ALL_EVENTS[:BREAK_AFTER]
    assert agent.subscribes == []


async def test_retries_are_bounded(binding: str) -> None:
    agent = BreakingAgent("always")
    seen: list[str] = []
    with serve(agent) as base:
        async with Client(card(base, binding), resume=FAST) as client:
            with pytest.raises(StreamBrokenError):
                async for event in client.stream("go"):
                    seen.append(describe(event))
    assert seen == ALL_EVENTS[:BREAK_AFTER]
    assert len(agent.subscribes) == FAST.max_attempts
