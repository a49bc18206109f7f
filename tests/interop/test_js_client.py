"""The official JS SDK (``@a2a-js/sdk``, tests/js) as a client of ``accord serve``, over
JSON-RPC, HTTP+JSON and gRPC: send, stream, get, list, cancel, subscribe (and resubscribe after
dropping the stream), push-config create/get/list/delete, the extended card with and without
credentials, and accord's errors arriving as the SDK's own error classes.

The checks are written in JS (tests/js/client_checks.mjs, one assertion block each); node runs
them once per binding against one server for the module, and each is reported here as a test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from accord_server_proc import BEARER_TOKEN, AccordServer, accord_serve
from tests.js.peer import node_json
from tests.processes import free_port

pytestmark = pytest.mark.processes

BINDINGS = ("JSONRPC", "HTTP+JSON", "GRPC")
CHECKS = (
    "card_names_the_binding",
    "send_returns_the_completed_task",
    "send_with_a_direct_answer_is_a_message",
    "stream_yields_the_task_then_updates",
    "get_honours_history_length",
    "list_pages_through_one_context",
    "cancel_stops_a_running_task",
    "subscribe_follows_a_task_to_its_end",
    "subscribe_resumes_after_a_disconnect",
    "subscribe_follows_an_input_required_task_through_the_next_turn",
    "push_configs_create_get_list_delete",
    "extended_card_with_the_bearer_token",
    "extended_card_without_credentials_is_refused",
    "unknown_task_is_task_not_found",
    "a_terminal_task_refuses_messages_and_subscriptions",
    "an_unsupported_version_is_refused",
)


@pytest.fixture(scope="module")
def server(js_sdk: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AccordServer]:
    """One ``accord serve`` for the module: the interop test agents, gRPC on a port of its own."""
    workdir = tmp_path_factory.mktemp("js-client")
    with accord_serve(workdir, args=("--grpc-port", str(free_port()))) as running:
        yield running
    problems = [
        line for line in running.log().splitlines() if "ERROR" in line or "Traceback" in line
    ]
    assert problems == [], "\n".join(problems[:20])


Verdicts = dict[str, dict[str, object]]


@pytest.fixture(scope="module", params=BINDINGS)
def verdicts(request: pytest.FixtureRequest, server: AccordServer) -> Verdicts:
    """The checks of one binding, run by node once: {check: {"ok": …, "error": …}}."""
    found: Verdicts = node_json("client_checks.mjs", server.url, request.param, BEARER_TOKEN)  # type: ignore[assignment]
    return found


def test_every_check_ran(verdicts: Verdicts) -> None:
    assert sorted(verdicts) == sorted(CHECKS)


@pytest.mark.parametrize("check", CHECKS)
def test_js_client(verdicts: Verdicts, check: str) -> None:
    verdict = verdicts.get(check, {"ok": False, "error": "not run"})
    assert verdict["ok"], verdict["error"]
