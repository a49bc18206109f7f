"""Which interface of a card the client talks to."""

from __future__ import annotations

import pytest

from accord.client import Client, NoCompatibleInterfaceError, select_interface
from accord.wire._model import AgentCard, AgentInterface


def card(*interfaces: tuple[str, str, str]) -> AgentCard:
    return AgentCard(
        name="a",
        description="d",
        version="1",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version=version)
            for binding, version, url in interfaces
        ],
    )


CARD = card(
    ("GRPC", "1.0", "localhost:50051"),
    ("HTTP+JSON", "1.0", "http://h/rest"),
    ("JSONRPC", "1.0", "http://h/rpc"),
)


def test_first_supported_in_card_order() -> None:
    assert select_interface(CARD, ["JSONRPC", "HTTP+JSON"]).url == "http://h/rest"
    assert select_interface(CARD, ["JSONRPC", "HTTP+JSON", "GRPC"]).url == "localhost:50051"


def test_forced_binding() -> None:
    assert select_interface(CARD, ["JSONRPC", "HTTP+JSON"], "JSONRPC").url == "http://h/rpc"
    assert select_interface(CARD, ["JSONRPC", "HTTP+JSON"], "http+json").url == "http://h/rest"


def test_forcing_an_unsupported_or_absent_binding_fails() -> None:
    with pytest.raises(NoCompatibleInterfaceError):
        select_interface(CARD, ["JSONRPC"], "GRPC")
    with pytest.raises(NoCompatibleInterfaceError, match="offered"):
        select_interface(
            card(("HTTP+JSON", "1.0", "http://h")), ["JSONRPC", "HTTP+JSON"], "JSONRPC"
        )


def test_other_major_versions_are_skipped() -> None:
    mixed = card(("JSONRPC", "0.3", "http://old"), ("JSONRPC", "1.0", "http://new"))
    assert select_interface(mixed, ["JSONRPC"]).url == "http://new"
    only_old = card(("JSONRPC", "0.3", "http://old"))
    with pytest.raises(NoCompatibleInterfaceError):
        select_interface(only_old, ["JSONRPC"])


async def test_client_uses_the_selected_interface() -> None:
    async with Client(CARD, binding="JSONRPC") as client:
        assert client.binding == "JSONRPC"
        assert client.interface.url == "http://h/rpc"
    async with Client(CARD) as client:  # gRPC first in the card, and accord has a gRPC transport
        assert client.binding == "GRPC"
