"""Two ``accord serve`` processes negotiate a contract over A2A, end to end, each with its
own key, store and credentials: agent:a proposes (``accord contracts propose``), agent:b
accepts; then agent:a's messages to agent:b in scope pass, out of scope are refused with
their code, an action needing approval waits for a person; after a cancel and after expiry
they are refused too, and the cancel cancels the task still running under the contract."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import msgspec
import pytest
from tests.harness.harness_proc import HarnessServer, start
from tests.processes import free_port
from tests.waiting import eventually, until

from accord.client import ApiKey, Client, PermissionDeniedError
from accord.contracts import _documents as documents
from accord.contracts._proofs import channel_acceptance
from accord.contracts._wire import (
    CONTRACTS_URI,
    NOTICE_MEDIA_TYPE,
    TRUST_URI,
    Notice,
    Reference,
    notice_data,
    receipt_data,
    under_contract,
)
from accord.wire._codec import encode
from accord.wire._model import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from accord.wire._time import format_timestamp
from accord.wire.protobuf import to_proto

pytestmark = pytest.mark.processes

ACCORD = Path(sys.executable).with_name("accord")
OPERATOR_A = "operator-a-key-0123456789"
OPERATOR_B = "operator-b-key-0123456789"
A_AT_B = "agent-a-at-b-0123456789"  # what agent:a presents to agent:b
B_AT_A = "agent-b-at-a-0123456789"
C_AT_B = "agent-c-at-b-0123456789"  # agent:c, a peer of agent:b's in no contract
STRANGER_PRINCIPAL = f"""
[[principals]]
identity = "agent:c"
api_key = "{C_AT_B}"
"""
PATIENCE_S = 30.0

TERMS = {
    "purpose": "Research a market",
    "taskCategory": "research",
    "requestedOutcome": "A sourced brief",
    "successCriteria": ["Primary sources included"],
    "allowedActions": ["browse", "purchase"],
    "prohibitedActions": ["delete"],
    "allowedData": ["public"],
    "prohibitedData": ["secrets"],
    "evidenceRequirements": ["links"],
    "delegationRules": ["explicit"],
    "humanApprovalRequirements": ["purchase"],
    "factCheckingPolicy": "important_claims",
    "mediationPolicy": "mutual_consent",
    "retentionDays": 30,
    "completionConditions": ["brief delivered"],
    "cancellationConditions": ["either party"],
}


def config(
    me: str,
    key: Path,
    operator: str,
    peer: str,
    peer_port: int,
    creds: tuple[str, str],
    extra: str = "",
) -> str:
    presented, accepted = creds
    return f"""{extra}
[[principals]]
identity = "op-{me[-1]}"
actors = ["accord.contracts.Operator", "a2a.tasks.Client"]
api_key = "{operator}"

[[principals]]
identity = "{peer}"
api_key = "{accepted}"

[identity]
agent_id = "{me}"
key_file = "{key}"

[contracts]
sweep_interval_s = 0.2

[contracts.peers."{peer}"]
url = "http://127.0.0.1:{peer_port}"
api_key = "{presented}"

[card]
skills = [
  {{ id = "browse", name = "browse", description = "Look things up" }},
  {{ id = "purchase", name = "purchase", description = "Buy things" }},
]
"""


@dataclass
class Pair:
    a: HarnessServer
    b: HarnessServer
    workdir: Path


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    workdir = tmp_path_factory.mktemp("contracts")
    for name in ("a", "b"):
        done = subprocess.run(
            [str(ACCORD), "keys", "generate", str(workdir / f"{name}.key")],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert json.loads(done.stdout)["kty"] == "OKP"
        assert (workdir / f"{name}.key").stat().st_mode & 0o077 == 0  # the owner's only
    port_a, port_b = free_port(), free_port()
    (workdir / "a.toml").write_text(
        config("agent:a", workdir / "a.key", OPERATOR_A, "agent:b", port_b, (A_AT_B, B_AT_A))
    )
    (workdir / "b.toml").write_text(
        config("agent:b", workdir / "b.key", OPERATOR_B, "agent:a", port_a, (B_AT_A, A_AT_B),
               STRANGER_PRINCIPAL)
    )  # fmt: skip
    a = start(workdir, f"sqlite:///{workdir / 'a.db'}", workdir / "a.toml", name="a",
              grpc=False, agent="echo", port=port_a)  # fmt: skip
    try:
        b = start(workdir, f"sqlite:///{workdir / 'b.db'}", workdir / "b.toml", name="b",
                  grpc=True, agent="echo", port=port_b)  # fmt: skip
    except BaseException:
        a.stop()
        raise
    try:
        yield Pair(a, b, workdir)
    finally:
        a.stop()
        b.stop()


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(ACCORD), *args], capture_output=True, text=True, timeout=60)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def contracts(server: HarnessServer, operator: str, *args: str) -> dict[str, Any]:
    done = cli("contracts", args[0], server.url, *args[1:], "--json",
               "--header", f"X-API-Key:{operator}")  # fmt: skip
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def negotiate(pair: Pair, tmp: Path, **extra: str) -> dict[str, Any]:
    """agent:a proposes (CLI), agent:b accepts (CLI): the active document, as agent:a has it."""
    terms_file = tmp / f"terms-{uuid.uuid4().hex}.json"
    terms_file.write_text(json.dumps(TERMS))
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in extra.items()]
    proposed = contracts(
        pair.a, OPERATOR_A, "propose", "--responder", "agent:b", "--terms", str(terms_file), *flags
    )
    interaction_id = proposed["interaction"]["interactionId"]
    assert proposed["interaction"]["status"] == "pending"
    seen = contracts(pair.b, OPERATOR_B, "show", interaction_id)
    assert seen["interaction"]["status"] == "pending"
    assert seen["interaction"]["acceptances"]["agent:a"]["method"] == "ed25519"
    accepted = contracts(pair.b, OPERATOR_B, "accept", interaction_id)
    assert accepted["interaction"]["status"] == "active"

    def active_at_a() -> dict[str, Any] | None:
        record = contracts(pair.a, OPERATOR_A, "show", interaction_id)
        return record if record["interaction"]["status"] == "active" else None

    record: dict[str, Any] = eventually(
        active_at_a, "agent:a to learn of the acceptance", PATIENCE_S
    )
    return record["interaction"]


async def send_as_a(
    pair: Pair,
    document: dict[str, Any],
    text: str,
    *,
    action: str | None = None,
    key: str = A_AT_B,
    binding: str | None = None,
    terms_hash: str | None = None,
) -> Task | Message:
    metadata = under_contract(document, action)
    if terms_hash is not None:
        metadata[TRUST_URI] = {**metadata[TRUST_URI], "termsHash": terms_hash}
    message = Message(
        message_id=str(uuid.uuid4()), role=Role.USER, parts=[Part(text=text)], metadata=metadata
    )
    async with Client.connect(
        pair.b.url, credentials=ApiKey(key), binding=binding, extensions=[TRUST_URI]
    ) as client:
        return await client.send(message)


async def refused_with(code: str, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(PermissionDeniedError) as refusal:
        await send_as_a(*args, **kwargs)
    assert refusal.value.metadata.get("contractReason") == code, refusal.value
    return refusal.value.message


async def test_two_servers_negotiate_and_enforce_a_contract(pair: Pair, tmp_path: Path) -> None:
    document = negotiate(pair, tmp_path)
    assert set(document["acceptances"]) == {"agent:a", "agent:b"}
    # In scope: the echo agent answers.
    task = await send_as_a(pair, document, "find sources", action="browse")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    # The same over gRPC: the gate is the engine's, on every binding.
    task = await send_as_a(pair, document, "more sources", action="browse", binding="GRPC")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    # Out of scope, and every other refusal, with its code, on JSON-RPC and gRPC.
    for binding in (None, "GRPC"):
        await refused_with("action_outside_contract", pair, document, "wipe", action="delete",
                           binding=binding)  # fmt: skip
        await refused_with("action_outside_contract", pair, document, "hi")  # names none
        await refused_with("contract_unknown", pair, document, "hi", action="browse",
                           key=OPERATOR_B)  # fmt: skip
        await refused_with("contract_mismatch", pair, document, "hi", action="browse",
                           terms_hash="x" * 43, binding=binding)  # fmt: skip
    message = await refused_with("action_outside_contract", pair, document, "wipe", action="delete")
    assert "prohibited" in message
    assert "contract refused a message: action_outside_contract" in pair.b.log()


async def test_an_action_needing_approval_waits_for_a_person(pair: Pair, tmp_path: Path) -> None:
    document = negotiate(pair, tmp_path)
    parked = await send_as_a(pair, document, "buy the report", action="purchase")
    assert isinstance(parked, Task) and parked.status.state is TaskState.INPUT_REQUIRED
    approved = contracts(
        pair.b, OPERATOR_B, "approve", document["interactionId"], "--task", parked.id
    )
    assert approved["approvals"][0]["taskId"] == parked.id

    async def state() -> TaskState:
        async with Client.connect(pair.b.url, credentials=ApiKey(A_AT_B)) as client:
            task = await client.get_task(parked.id)
        assert isinstance(task.status.state, TaskState)
        return task.status.state

    async def completed() -> bool:
        return await state() is TaskState.COMPLETED

    await until(completed, "the approved task to run", PATIENCE_S, every_s=0.1)


async def test_after_a_cancel_messages_are_refused_and_its_tasks_cancelled(
    pair: Pair, tmp_path: Path
) -> None:
    document = negotiate(pair, tmp_path)
    interaction_id = document["interactionId"]
    waiting = await send_as_a(pair, document, "buy the report", action="purchase")
    assert isinstance(waiting, Task) and waiting.status.state is TaskState.INPUT_REQUIRED
    cancelled = contracts(pair.a, OPERATOR_A, "cancel", interaction_id, "--reason", "plans changed")
    assert cancelled["interaction"]["status"] == "cancelled"
    assert cancelled["ending"]["by"] == "agent:a"

    def cancelled_at_b() -> dict[str, Any] | None:
        record = contracts(pair.b, OPERATOR_B, "show", interaction_id)
        return record if record["interaction"]["status"] == "cancelled" else None

    record = eventually(cancelled_at_b, "agent:b to learn of the cancel", PATIENCE_S)
    assert record["ending"] == cancelled["ending"] | {"at": record["ending"]["at"]}
    await refused_with("contract_not_active", pair, document, "more", action="browse")
    async with Client.connect(pair.b.url, credentials=ApiKey(A_AT_B)) as client:
        task = await client.get_task(waiting.id)
    assert task.status.state is TaskState.CANCELED
    # Terminal: nothing moves it again.
    done = cli("contracts", "complete", pair.b.url, interaction_id,
               "--header", f"X-API-Key:{OPERATOR_B}", check=False)  # fmt: skip
    assert done.returncode == 1 and "contract_conflict" in done.stderr


async def test_after_expiry_messages_are_refused(pair: Pair, tmp_path: Path) -> None:
    # Far enough ahead that the negotiation (two CLI processes) ends before it, on a loaded
    # machine too; the sweeper is then waited for.
    soon = format_timestamp(time.time_ns() // 1_000_000 + 12_000)
    document = negotiate(pair, tmp_path, expires_at=soon)
    interaction_id = document["interactionId"]

    def expired_at_b() -> bool:
        record = contracts(pair.b, OPERATOR_B, "show", interaction_id)
        return bool(record["interaction"]["status"] == "expired")

    eventually(expired_at_b, "the sweeper to expire the contract", PATIENCE_S)
    await refused_with("contract_expired", pair, document, "late", action="browse")
    record = contracts(pair.b, OPERATOR_B, "show", interaction_id)
    assert [e["kind"] for e in record["events"]][-1] == "expired"


async def test_the_negotiated_document_verifies_offline(pair: Pair, tmp_path: Path) -> None:
    document = negotiate(pair, tmp_path)
    record = contracts(pair.a, OPERATOR_A, "show", document["interactionId"])
    saved = tmp_path / "contract.json"
    saved.write_text(json.dumps(record))
    cards = []
    for name, server in (("a", pair.a), ("b", pair.b)):
        card = tmp_path / f"card-{name}.json"
        card.write_text(cli("card", server.url, "--json").stdout)
        cards += ["--keys", f"agent:{name}={card}"]
    done = cli("contracts", "verify", str(saved), *cards)
    assert "ok   acceptance of agent:a" in done.stdout
    assert "ok   acceptance of agent:b" in done.stdout
    # A changed term: the hash no longer holds, and verify says so (exit 1).
    record["interaction"]["contract"]["retentionDays"] = 3650
    saved.write_text(json.dumps(record))
    done = cli("contracts", "verify", str(saved), *cards, check=False)
    assert done.returncode == 1 and "FAIL terms hash" in done.stdout
    # Both cards are signed, and accord card says so.
    shown = cli("card", pair.b.url, "--verify")
    assert "signature: valid (key " in shown.stdout


def test_accord_send_fills_in_the_contract_metadata(pair: Pair, tmp_path: Path) -> None:
    """``accord send --contract ID --action A``: the contract read from agent:a's operators'
    API, or from a file, and the message under it accepted (or refused) by agent:b."""
    document = negotiate(pair, tmp_path)
    interaction_id = document["interactionId"]
    as_a = ["--header", f"X-API-Key:{A_AT_B}"]
    from_a = ["--contract-api", pair.a.url, "--contract-api-header", f"X-API-Key:{OPERATOR_A}"]
    sent = cli("send", pair.b.url, "find sources", *as_a, "--contract", interaction_id,
               "--action", "browse", "--data-class", "public", *from_a, "--json")  # fmt: skip
    task = json.loads(sent.stdout)["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    trust = task["history"][0]["metadata"][TRUST_URI]
    assert trust == {
        "interactionId": interaction_id, "termsHash": document["termsHash"],
        "initiatorAgentId": "agent:a", "responderAgentId": "agent:b",
    }  # fmt: skip
    assert task["history"][0]["metadata"][CONTRACTS_URI] == {
        "action": "browse",
        "dataClasses": ["public"],
    }
    # the record as `contracts show --json` saves it, and an action outside the terms
    saved = tmp_path / "contract.json"
    saved.write_text(json.dumps(contracts(pair.a, OPERATOR_A, "show", interaction_id)))
    refused = cli("send", pair.b.url, "wipe", *as_a, "--contract", str(saved),
                  "--action", "delete", check=False)  # fmt: skip
    assert refused.returncode == 1
    assert "PermissionDeniedError: action_outside_contract" in refused.stderr
    streamed = cli("stream", pair.b.url, "more", *as_a, "--contract", str(saved),
                   "--action", "browse")  # fmt: skip
    assert "completed" in streamed.stdout
    # --action without --contract is a usage error
    alone = cli("send", pair.b.url, "hi", *as_a, "--action", "browse", check=False)
    assert alone.returncode == 2 and "go with --contract" in alone.stderr


def test_a_proposal_missing_fields_names_every_one(pair: Pair, tmp_path: Path) -> None:
    terms_file = tmp_path / "partial.json"
    terms_file.write_text(json.dumps({"purpose": "Research a market"}))
    done = cli("contracts", "propose", pair.a.url, "--responder", "agent:b", "--terms",
               str(terms_file), "--header", f"X-API-Key:{OPERATOR_A}", check=False)  # fmt: skip
    assert done.returncode == 1
    for field in ("taskCategory", "allowedActions", "retentionDays", "cancellationConditions"):
        assert field in done.stderr
    assert "more)" not in done.stderr
    # the template, as printed, is a proposal agent:b receives
    template = tmp_path / "template.json"
    template.write_text(cli("contracts", "terms-template").stdout)
    proposed = contracts(
        pair.a, OPERATOR_A, "propose", "--responder", "agent:b", "--terms", str(template)
    )
    assert proposed["interaction"]["status"] == "pending"


# --- notices, strangers and unsigned acceptances ----------------------------------------------


def interfaces(server: HarnessServer) -> dict[str, str]:
    """The URL of each binding the server's card lists."""
    card = httpx.get(f"{server.url}/.well-known/agent-card.json", timeout=10).json()
    return {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}


def propose(pair: Pair, tmp: Path, **terms: Any) -> dict[str, Any]:
    """agent:a's operator proposes (the CLI): the pending document, delivered to agent:b."""
    terms_file = tmp / f"terms-{uuid.uuid4().hex}.json"
    terms_file.write_text(json.dumps({**TERMS, **terms}))
    proposed = contracts(
        pair.a, OPERATOR_A, "propose", "--responder", "agent:b", "--terms", str(terms_file)
    )
    document: dict[str, Any] = proposed["interaction"]
    return document


def notice_message(data: dict[str, Any], reference: dict[str, str]) -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.USER,
        parts=[Part(data=data, media_type=NOTICE_MEDIA_TYPE)],
        metadata={TRUST_URI: reference},
    )


async def task_count(server: HarnessServer) -> int:
    async with Client.connect(server.url, credentials=ApiKey(OPERATOR_B)) as client:
        page = await client.list_tasks_page(page_size=1)
    return page.total_size


def receipt(answer: object) -> Any:
    assert isinstance(answer, Message), answer
    [part] = answer.parts
    assert part.media_type == NOTICE_MEDIA_TYPE
    return part.data


async def test_a_notice_never_makes_a_task_whatever_its_configuration(
    pair: Pair, tmp_path: Path
) -> None:
    """A notice is answered with its receipt and makes no task, whatever the request's
    configuration, on every binding, sent or streamed (here: agent:a's proposal, which
    agent:b has already, sent again: taken once, answered each time)."""
    document = propose(pair, tmp_path)
    interaction_id = document["interactionId"]
    data = notice_data(Notice("proposal", interaction_id, document))
    reference = Reference.of(document).metadata()
    expected = receipt_data(interaction_id, "pending")
    configurations = [
        SendMessageConfiguration(return_immediately=True),
        SendMessageConfiguration(
            return_immediately=True,
            history_length=0,
            accepted_output_modes=["text/plain"],
            task_push_notification_config=TaskPushNotificationConfig(url="https://hook.example"),
        ),
        SendMessageConfiguration(history_length=5),
    ]
    before = await task_count(pair.b)
    for binding in ("JSONRPC", "HTTP+JSON", "GRPC"):
        async with Client.connect(
            pair.b.url, credentials=ApiKey(A_AT_B), binding=binding, extensions=[TRUST_URI]
        ) as client:
            for configuration in configurations:
                answer = await client.send(
                    notice_message(data, reference), configuration=configuration
                )
                assert receipt(answer) == expected, (binding, configuration)
            chosen = msgspec.structs.replace(
                notice_message(data, reference), context_id="the-senders-own-context"
            )
            assert receipt(await client.send(chosen, return_immediately=True)) == expected
            for configuration in configurations:
                events = [
                    event
                    async for event in client.stream(
                        notice_message(data, reference), configuration=configuration
                    )
                ]
                assert [receipt(event.message) for event in events] == [expected], binding
    assert await task_count(pair.b) == before
    log = pair.b.log()
    assert "reply() answers a new message without a task" not in log
    assert "Traceback" not in log


async def test_a_peer_with_keys_cannot_propose_with_an_unsigned_acceptance(pair: Pair) -> None:
    """agent:a publishes keys on its card, so agent:b refuses its unsigned (oauth_account)
    acceptance even over agent:a's own authenticated channel (require_signed_acceptances)."""
    now = time.time_ns() // 1_000_000
    interaction_id = str(uuid.uuid4())
    document = documents.new_proposal(
        {**TERMS, "protocolVersion": "0.1", "interactionId": interaction_id,
         "parties": ["agent:a", "agent:b"]},
        initiator="agent:a",
        responder="agent:b",
        initiator_transport=documents.transport(interfaces(pair.a)["JSONRPC"]),
        responder_transport=documents.transport(interfaces(pair.b)["JSONRPC"]),
        now_ms=now,
        expires_ms=now + 3_600_000,
        accept=lambda hash_, at: channel_acceptance("agent:a", hash_, at),
    )  # fmt: skip
    message = notice_message(
        notice_data(Notice("proposal", interaction_id, document)),
        Reference.of(document).metadata(),
    )
    async with Client.connect(pair.b.url, credentials=ApiKey(A_AT_B)) as client:
        with pytest.raises(PermissionDeniedError) as refused:
            await client.send(message)
    assert refused.value.metadata.get("contractReason") == "invalid_acceptance"
    assert "require_signed_acceptances" in refused.value.message
    shown = cli("contracts", "show", pair.b.url, interaction_id,
                "--header", f"X-API-Key:{OPERATOR_B}", check=False)  # fmt: skip
    assert shown.returncode == 1 and "contract_unknown" in shown.stderr


async def raw_answers(pair: Pair, interaction_id: str, key: str) -> list[Any]:
    """What ``key``'s holder is answered, byte for byte, when it names ``interaction_id``:
    a message under it and notices of it, on JSON-RPC, HTTP+JSON and gRPC, sent and
    streamed (status, headers but the date, body; gRPC: code, details, trailers)."""
    reference = {
        "interactionId": interaction_id,
        "termsHash": "x" * 43,
        "initiatorAgentId": "agent:a",
        "responderAgentId": "agent:b",
    }
    metadata = {TRUST_URI: reference, CONTRACTS_URI: {"action": "browse"}}
    messages = [
        Message(message_id="m", role=Role.USER, parts=[Part(text="hi")], metadata=metadata),
        notice_message({"kind": "cancellation", "interactionId": interaction_id}, reference),
        notice_message({"kind": "completion", "interactionId": interaction_id}, reference),
        notice_message({"kind": "acceptance", "interaction": {"interactionId": interaction_id}},
                       reference),
    ]  # fmt: skip
    urls = interfaces(pair.b)
    headers = {"A2A-Version": "1.0", "X-API-Key": key, "A2A-Extensions": TRUST_URI}
    answers: list[Any] = []
    async with httpx.AsyncClient(timeout=10, headers=headers) as http:
        for message in messages:
            message = msgspec.structs.replace(message, message_id=str(uuid.uuid4()))
            request = SendMessageRequest(message=message)
            params = json.loads(encode(request))
            for method in ("SendMessage", "SendStreamingMessage"):
                body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
                answers.append(_shown(await http.post(urls["JSONRPC"], json=body)))
            for verb in ("send", "stream"):
                url = f"{urls['HTTP+JSON'].rstrip('/')}/message:{verb}"
                answers.append(_shown(await http.post(url, json=params)))
            async with grpc.aio.insecure_channel(f"127.0.0.1:{pair.b.grpc_port}") as channel:
                serialized = to_proto(request).SerializeToString()
                grpc_metadata = (("a2a-version", "1.0"), ("x-api-key", key))
                send = channel.unary_unary("/lf.a2a.v1.A2AService/SendMessage")
                stream = channel.unary_stream("/lf.a2a.v1.A2AService/SendStreamingMessage")
                for call in (send(serialized, metadata=grpc_metadata),
                             stream(serialized, metadata=grpc_metadata)):  # fmt: skip
                    try:
                        answers.append(("answered", [item async for item in _items(call)]))
                    except grpc.aio.AioRpcError as error:
                        answers.append(
                            (error.code(), error.details(), tuple(error.trailing_metadata()))
                        )
    return answers


async def _items(call: Any) -> AsyncIterator[Any]:
    if hasattr(call, "__aiter__"):
        async for item in call:
            yield item
    else:
        yield await call


def _shown(response: httpx.Response) -> tuple[int, list[tuple[str, str]], bytes]:
    kept = [(k, v) for k, v in response.headers.items() if k.lower() != "date"]
    return response.status_code, kept, response.content


async def test_a_contract_is_unknown_to_anyone_but_its_other_party(
    pair: Pair, tmp_path: Path
) -> None:
    """Naming a contract tells a stranger nothing: agent:c (a principal of agent:b's in no
    contract) and agent:b's own operator get, byte for byte, the answers they got before the
    contract existed, pending or active, on every binding, for messages and notices."""
    interaction_id = str(uuid.uuid4())
    strangers = (C_AT_B, OPERATOR_B)
    unknown = [await raw_answers(pair, interaction_id, key) for key in strangers]
    for answer in unknown[0]:  # each a refusal naming contract_unknown
        assert "contract_unknown" in str(answer[2] if isinstance(answer[2], bytes) else answer[1])
    propose(pair, tmp_path, interactionId=interaction_id)
    assert [await raw_answers(pair, interaction_id, key) for key in strangers] == unknown
    accepted = contracts(pair.b, OPERATOR_B, "accept", interaction_id)
    assert accepted["interaction"]["status"] == "active"
    assert [await raw_answers(pair, interaction_id, key) for key in strangers] == unknown
    # Its other party is told what is wrong (here: the terms hash its message names).
    await refused_with("contract_mismatch", pair, accepted["interaction"], "hi", action="browse",
                       terms_hash="x" * 43)  # fmt: skip
    assert "it exists; 'agent:c' is not its other party" in pair.b.log()
