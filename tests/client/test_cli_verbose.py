"""``--verbose``: each HTTP exchange of a command on standard error, secrets masked."""

from __future__ import annotations

import httpx
import pytest
from accord_server import TOKEN, AccordServer
from cli_run import accord, json_out

from accord.cli._verbose import MASK, mask_header, mask_line, mask_url


def test_verbose_shows_each_request_and_response_with_secrets_masked(
    accord_server: AccordServer,
) -> None:
    url = accord_server.url
    result = accord("send", url, "hello verbose", "-v", "--header", "X-Session-Token: key-4711")
    assert result.returncode == 0, result.stderr
    assert "echo: hello verbose" in result.stdout  # the answer as without -v, on stdout
    shown = result.stderr
    assert "> GET " in shown and "/.well-known/agent-card.json HTTP/1.1" in shown
    assert f"> POST {url}" in shown
    assert "SendStreamingMessage" in shown and '"text":"hello verbose"' in shown
    assert "< HTTP/1.1 200 OK" in shown
    assert "< content-type: text/event-stream" in shown
    assert "TASK_STATE_COMPLETED" in shown  # the stream's events, as they came
    assert f"> authorization: Bearer {MASK}" in shown
    assert f"> x-session-token: {MASK}" in shown
    assert TOKEN not in shown and "key-4711" not in shown


def test_verbose_masks_secrets_in_bodies(accord_server: AccordServer) -> None:
    url = accord_server.url
    task_id = json_out(accord("send", url, "slow:10", "--no-wait", "--json"))["task"]["id"]
    added = accord(
        "push", "add", url, task_id, "https://hooks.example/x",
        "--webhook-token", "hook-secret-1", "--auth-scheme", "Bearer",
        "--auth-credentials", "cred-secret-2", "--verbose",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "CreateTaskPushNotificationConfig" in added.stderr
    assert "hook-secret-1" not in added.stderr and "cred-secret-2" not in added.stderr
    assert f'"credentials": "{MASK}"' in added.stderr
    accord("tasks", "cancel", url, task_id)


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("Authorization", "Bearer abc.def", f"Bearer {MASK}"),
        ("Proxy-Authorization", "Basic dXNlcjpwYXNz", f"Basic {MASK}"),
        ("X-API-Key", "k", MASK),
        ("Cookie", "session=1", MASK),
        ("X-Participant-Id", "alice", "alice"),
        ("Content-Type", "application/json", "application/json"),
    ],
)
def test_headers_with_credentials_are_masked(name: str, value: str, shown: str) -> None:
    assert mask_header(name, value) == shown


def test_body_lines_mask_secret_fields_at_any_depth() -> None:
    line = '{"params": {"url": "u", "token": "t1", "authentication": {"credentials": "c2"}}}'
    assert mask_line(line) == (
        f'{{"params": {{"url": "u", "token": "{MASK}", '
        f'"authentication": {{"credentials": "{MASK}"}}}}}}'
    )
    assert mask_line('data: {"api_key": "k"}') == f'data: {{"api_key": "{MASK}"}}'
    plain = '{"jsonrpc":"2.0","id":1}'
    assert mask_line(plain) == plain  # untouched: printed as sent
    assert mask_line("id: 3") == "id: 3"


def test_chat_takes_no_verbose(accord_server: AccordServer) -> None:
    refused = accord("chat", accord_server.url, "--verbose")
    assert refused.returncode == 2
    assert refused.stderr == "accord: chat is interactive: --verbose does not apply\n"


def test_verbose_over_grpc_shows_the_card_and_says_the_calls_are_not_shown(
    accord_server: AccordServer,
) -> None:
    result = accord("send", accord_server.url, "hello", "-v", "--binding", "grpc")
    assert result.returncode == 0, result.stderr
    assert "/.well-known/agent-card.json HTTP/1.1" in result.stderr
    assert "* gRPC calls to " in result.stderr and "are not shown" in result.stderr


def test_query_parameters_with_credentials_are_masked() -> None:
    url = httpx.URL("http://agent.example/a2a?api_key=k1&tenant=acme&access_token=t2")
    assert (
        mask_url(url) == f"http://agent.example/a2a?api_key={MASK}&tenant=acme&access_token={MASK}"
    )
    plain = httpx.URL("http://agent.example/a2a?tenant=acme")
    assert mask_url(plain) == "http://agent.example/a2a?tenant=acme"
