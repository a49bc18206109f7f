"""The operators' API: authenticated and granted like the rest, scoped to the caller's
tenant, with field-level errors and a reason code on every refusal."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from tests.server.server_helpers import serve_app

from accord.app._build import build_app
from accord.app._settings import Settings
from accord.contracts._api import ContractApi
from accord.contracts._settings import ContractSettings, Identity, Peer
from accord.contracts._wire import Notice
from accord.core._caller import Caller
from accord.signing._keys import KeySet

from .contract_helpers import VECTOR_TERMS, new_key, public
from .service_helpers import FakePeers, now_ms

A_KEY, B_KEY = new_key(), new_key()
KEYS = {
    "op-a": ("operator-a-key-0123456789", "", ["accord.contracts.Operator"]),
    "op-x": ("operator-x-key-0123456789", "x", ["accord.contracts.Operator"]),
    "client": ("a-client-key-0123456789", "", ["a2a.tasks.Client"]),
}
TERMS = {k: v for k, v in VECTOR_TERMS.items() if k not in ("interactionId", "parties")}


def headers(who: str) -> dict[str, str]:
    return {"X-API-Key": KEYS[who][0]}


@pytest.fixture
async def api() -> AsyncIterator[tuple[httpx.AsyncClient, FakePeers]]:
    principals = [
        {"identity": name, "api_key": key, "tenant": tenant, "actors": actors}
        for name, (key, tenant, actors) in KEYS.items()
    ]
    settings = dataclasses.replace(
        Settings(store="memory://", public_url="https://b.example"),
        principals=principals,
        identity=Identity("agent:a", KeySet([A_KEY])),
        contracts=ContractSettings(peers={"agent:b": Peer("agent:b", "https://b.example")}),
    )
    app = build_app(settings)
    peers = FakePeers({"agent:b": public(B_KEY), "agent:a": public(A_KEY)})
    api = app.endpoint(ContractApi)
    assert api is not None
    api.service.peers = peers  # the other agent is played here
    async with serve_app(app) as http:
        yield http, peers


async def propose(http: httpx.AsyncClient, who: str = "op-a", **body: Any) -> httpx.Response:
    payload = {"responder": "agent:b", "terms": TERMS, **body}
    return await http.post("/contracts", json=payload, headers=headers(who))


def reason(response: httpx.Response) -> str:
    details = response.json()["error"]["details"]
    return str(details[0]["metadata"]["contractReason"])


async def test_only_operators_reach_it(api: tuple[httpx.AsyncClient, FakePeers]) -> None:
    http, _ = api
    assert (await http.get("/contracts")).status_code == 401
    refused = await http.get("/contracts", headers=headers("client"))
    assert refused.status_code == 403
    assert "accord.contracts.Operator" in refused.json()["error"]["message"]
    assert (await http.get("/contracts", headers=headers("op-a"))).json() == {"contracts": []}


async def test_propose_sends_a_signed_proposal(api: tuple[httpx.AsyncClient, FakePeers]) -> None:
    http, peers = api
    made = await propose(http)
    assert made.status_code == 201, made.text
    record = made.json()
    document = record["interaction"]
    assert document["status"] == "pending"
    assert document["contract"]["parties"] == ["agent:a", "agent:b"]
    assert document["acceptances"]["agent:a"]["signature"]["keyId"] == A_KEY.kid
    assert record["localAgent"] == "agent:a"
    [(to, notice)] = peers.sent
    assert (to, notice.kind, notice.document) == ("agent:b", "proposal", document)
    shown = await http.get(f"/contracts/{document['interactionId']}", headers=headers("op-a"))
    assert [e["kind"] for e in shown.json()["events"]] == ["proposed"]


async def test_another_tenants_contract_is_unknown(
    api: tuple[httpx.AsyncClient, FakePeers],
) -> None:
    http, _ = api
    interaction_id = str(uuid.uuid4())

    async def asked_by_op_x() -> list[tuple[int, list[tuple[str, str]], bytes]]:
        answers = []
        for request in (
            http.get(f"/contracts/{interaction_id}", headers=headers("op-x")),
            http.post(f"/contracts/{interaction_id}:cancel", json={}, headers=headers("op-x")),
            http.post(
                f"/contracts/{interaction_id}:approve",
                json={"taskId": "t"},
                headers=headers("op-x"),
            ),
        ):
            response = await request
            assert response.status_code == 404 and reason(response) == "contract_unknown"
            shown = [(k, v) for k, v in response.headers.items() if k.lower() != "date"]
            answers.append((response.status_code, shown, response.content))
        return answers

    before = await asked_by_op_x()
    made = await propose(http, terms={**TERMS, "interactionId": interaction_id})
    assert made.json()["interaction"]["interactionId"] == interaction_id
    assert await asked_by_op_x() == before  # byte for byte: as if it did not exist
    assert (await http.get("/contracts", headers=headers("op-x"))).json() == {"contracts": []}


async def test_invalid_terms_are_refused_field_by_field(
    api: tuple[httpx.AsyncClient, FakePeers],
) -> None:
    http, peers = api
    response = await propose(http, terms={**TERMS, "retentionDays": -1, "surprise": 1})
    assert response.status_code == 400 and reason(response) == "invalid_document"
    fields = [v["field"] for v in response.json()["error"]["details"][1]["fieldViolations"]]
    assert fields == ["terms.surprise", "terms.retentionDays"]
    assert (await propose(http, responder="agent:z")).json()["error"]["status"] == (
        "PERMISSION_DENIED"
    )  # not a configured peer
    bad_expiry = await propose(http, expiresAt="soon")
    assert bad_expiry.status_code == 400
    not_json = await http.post(
        "/contracts", content=b"{", headers={**headers("op-a"), "content-type": "application/json"}
    )
    assert not_json.status_code == 400
    assert peers.sent == []


async def test_moves_the_lifecycle_refuses(api: tuple[httpx.AsyncClient, FakePeers]) -> None:
    http, _ = api
    interaction_id = (await propose(http)).json()["interaction"]["interactionId"]
    accept = await http.post(
        f"/contracts/{interaction_id}:accept", json={}, headers=headers("op-a")
    )
    assert accept.status_code == 403 and reason(accept) == "not_permitted"  # the initiator
    unknown = await http.post(
        "/contracts/22222222-2222-4222-8222-222222222222:accept", json={}, headers=headers("op-a")
    )
    assert unknown.status_code == 404
    approve = await http.post(
        f"/contracts/{interaction_id}:approve", json={}, headers=headers("op-a")
    )
    assert approve.status_code == 400  # taskId is required


async def test_a_proposal_that_reaches_nobody_is_withdrawn(
    api: tuple[httpx.AsyncClient, FakePeers],
) -> None:
    http, peers = api
    from accord.contracts._errors import PEER_UNREACHABLE, ContractRefusal

    async def unreachable(*args: Any) -> str:
        raise ContractRefusal(PEER_UNREACHABLE, "connection refused")

    peers.send = unreachable  # type: ignore[method-assign]
    response = await propose(http)
    assert response.status_code == 502 and reason(response) == "peer_unreachable"
    [record] = (await http.get("/contracts", headers=headers("op-a"))).json()["contracts"]
    assert record["interaction"]["status"] == "cancelled"
    assert "did not reach agent:b" in record["ending"]["reason"]


async def test_received_proposals_are_listed_and_paged(
    api: tuple[httpx.AsyncClient, FakePeers],
) -> None:
    http, _ = api
    # agent:a's server is the responder here for proposals from agent:b.
    for interaction in range(3):
        terms = {**VECTOR_TERMS, "interactionId": f"11111111-1111-4111-8111-{interaction:012d}",
                 "parties": ["agent:b", "agent:a"]}  # fmt: skip
        document = proposal_from_b(terms)
        response = await propose_from_b(http, document)
        assert response == "pending"
    first = (await http.get("/contracts?pageSize=2", headers=headers("op-a"))).json()
    assert len(first["contracts"]) == 2
    rest = await http.get(
        f"/contracts?pageSize=2&pageToken={first['nextPageToken']}", headers=headers("op-a")
    )
    assert len(rest.json()["contracts"]) == 1 and "nextPageToken" not in rest.json()
    assert (await http.get("/contracts?pageSize=0", headers=headers("op-a"))).status_code == 400
    assert (await http.get("/contracts?status=paused", headers=headers("op-a"))).status_code == 400
    pending = await http.get("/contracts?status=active", headers=headers("op-a"))
    assert pending.json() == {"contracts": []}


def proposal_from_b(terms: dict[str, Any]) -> dict[str, Any]:
    from accord.contracts import _documents as documents
    from accord.contracts._proofs import signed_acceptance

    return documents.new_proposal(
        terms,
        initiator="agent:b",
        responder="agent:a",
        initiator_transport=documents.transport("https://b.example"),
        responder_transport=documents.transport("https://b.example"),
        now_ms=now_ms(),
        expires_ms=now_ms() + 3_600_000,
        accept=lambda hash_, at: signed_acceptance(
            terms["interactionId"], "agent:b", hash_, at, B_KEY
        ),
    )


async def propose_from_b(http: httpx.AsyncClient, document: dict[str, Any]) -> str:
    """agent:b's proposal, as the gate hands it to the service."""
    app = http._transport.app  # type: ignore[attr-defined]
    api = app.endpoint(ContractApi)
    assert api is not None
    service = api.service
    record = await service.receive(
        Notice("proposal", document["interactionId"], document),
        Caller(identity="agent:b", tenant="", authenticated=True),
    )
    return str(record.status)


async def test_paths_that_are_not_the_apis_stay_the_bindings(
    api: tuple[httpx.AsyncClient, FakePeers],
) -> None:
    http, _ = api
    # A tenant called "contracts" on the HTTP+JSON binding.
    response = await http.get("/contracts/tasks", headers=headers("client"))
    assert "a tenant the caller does not belong to" in response.json()["error"]["message"]
