"""Agent URLs are checked before use: a bad one is a ClientError saying what is wrong, never an
httpx exception; the command line's shorthand is expanded as httpie does."""

from __future__ import annotations

import pytest

from accord.client import Client, InvalidResponseError, InvalidURLError
from accord.client._urls import check_agent_url, expand_shorthand
from accord.wire._model import AgentCard, AgentInterface


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        (":9999", "http://localhost:9999"),
        (":9999/agent", "http://localhost:9999/agent"),
        ("localhost:9999", "http://localhost:9999"),
        ("agents.example.com", "http://agents.example.com"),
        ("[::1]:9999", "http://[::1]:9999"),
        ("https://agents.example.com", "https://agents.example.com"),
        ("http://127.0.0.1:9999/", "http://127.0.0.1:9999/"),
    ],
)
def test_shorthand(typed: str, meant: str) -> None:
    assert expand_shorthand(typed) == meant


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://::1:9999", "an IPv6 address goes in brackets: http://[::1]:9999"),
        ("http://fe80::1", "an IPv6 address goes in brackets: http://[fe80::1]"),
        ("http://127.0.0.1:99999", "invalid port"),
        ("http://127.0.0.1:0", "invalid port: expected a number from 1 to 65535"),
        ("http://127.0.0.1:abc", "invalid port"),
        ("ftp://example.com", "expected an http:// or https:// URL"),
        ("example.com", "expected an http:// or https:// URL"),
        ("http://", "no host"),
        ("http://[::1", "Invalid IPv6 URL"),
    ],
)
def test_invalid_urls_say_what_is_wrong(url: str, problem: str) -> None:
    with pytest.raises(InvalidURLError) as raised:
        check_agent_url(url)
    assert str(raised.value).startswith(f"invalid URL {url!r}: {problem}")
    assert isinstance(raised.value, ValueError)


def test_good_urls_pass() -> None:
    for url in ("http://127.0.0.1:9999", "https://[::1]:8443/a2a", "http://user@host/x"):
        assert check_agent_url(url) == url


async def test_connect_refuses_an_invalid_url_before_any_request() -> None:
    with pytest.raises(InvalidURLError, match="brackets"):
        await Client.connect("http://::1:9999")


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_a_card_advertising_an_unusable_url_is_the_agents_error(binding: str) -> None:
    card = AgentCard(
        name="a",
        description="d",
        version="1",
        supported_interfaces=[
            AgentInterface(url="http://::1:9999", protocol_binding=binding, protocol_version="1.0")
        ],
    )
    with pytest.raises(InvalidResponseError) as raised:
        Client(card)
    assert str(raised.value) == (
        f"the agent card's {binding} interface has an unusable URL 'http://::1:9999': "
        "an IPv6 address goes in brackets: http://[::1]:9999"
    )
