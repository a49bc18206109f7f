"""The agent card endpoint: content, caching headers, conditional requests."""

from __future__ import annotations

import email.utils
import re

import httpx
from server_helpers import Serve

from accord.agents._description import CardDescription

CARD = "/.well-known/agent-card.json"


async def test_card_lists_every_binding_with_absolute_urls(serve: Serve) -> None:
    async with serve(public_url="https://agents.example.com/") as http:
        card = (await http.get(CARD)).json()
    interfaces = {i["protocolBinding"]: i for i in card["supportedInterfaces"]}
    assert set(interfaces) == {"JSONRPC", "HTTP+JSON"}
    for interface in interfaces.values():
        assert interface["url"] == "https://agents.example.com"
        assert interface["protocolVersion"] == "1.0"
    assert card["capabilities"] == {
        "streaming": True,
        "pushNotifications": True,
        "extendedAgentCard": False,
    }


async def test_card_declares_capabilities_as_configured(serve: Serve) -> None:
    async with serve(
        streaming=False, push_notifications=False, extended_card=True, grpc_port=50999
    ) as http:
        card = (await http.get(CARD)).json()
    assert card["capabilities"]["streaming"] is False
    assert card["capabilities"]["pushNotifications"] is False
    assert card["capabilities"]["extendedAgentCard"] is True
    grpc = [i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    assert [i["url"] for i in grpc] == ["127.0.0.1:50999"]


async def test_card_carries_caching_headers(http: httpx.AsyncClient) -> None:
    response = await http.get(CARD)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert re.fullmatch(r'"[^"]+"', response.headers["etag"])
    max_age = re.search(r"max-age=(\d+)", response.headers["cache-control"])
    assert max_age is not None and int(max_age.group(1)) > 0
    assert email.utils.parsedate_to_datetime(response.headers["last-modified"]) is not None


async def test_card_answers_304_when_the_etag_matches(http: httpx.AsyncClient) -> None:
    first = await http.get(CARD)
    etag = first.headers["etag"]
    again = await http.get(CARD, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    listed = await http.get(CARD, headers={"If-None-Match": f'"other", {etag}'})
    assert listed.status_code == 304
    stale = await http.get(CARD, headers={"If-None-Match": '"stale"'})
    assert stale.status_code == 200
    assert stale.json() == first.json()


async def test_card_needs_no_version_header(serve: Serve) -> None:
    async with serve() as http:
        response = await http.get(CARD, headers={"A2A-Version": ""})
    assert response.status_code == 200


async def test_card_etag_changes_with_the_card(serve: Serve) -> None:
    async with serve(card=CardDescription(name="one")) as http:
        one = (await http.get(CARD)).headers["etag"]
    async with serve(card=CardDescription(name="two")) as http:
        two = (await http.get(CARD)).headers["etag"]
    assert one != two
