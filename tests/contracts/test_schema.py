"""The seed schema, field by field: every field of the document, its terms, its acceptances,
their signatures and the transports is refused when missing (if required), of the wrong type,
out of range or unknown — each with its field named — and accord's checker agrees with a
JSON Schema validator run on the seed itself for every case."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest

from accord.contracts._schema import SchemaError, parse_interaction, parse_terms

from .contract_helpers import new_key, proposal

SEED = Path(__file__).resolve().parents[2] / "src/accord/contracts/interaction-contract.schema.json"
# Formats asserted, as zod (which generated the seed) checks them; date-times by the seed's
# own pattern only, as zod does (seconds optional), not by RFC 3339's stricter format.
REFERENCE = jsonschema_rs.validator_for(
    json.loads(SEED.read_text()), validate_formats=True, formats={"date-time": lambda _: True}
)
KEY = new_key()
VALID = proposal(KEY)
VALID["acceptances"]["agent:b"] = copy.deepcopy(VALID["acceptances"]["agent:a"]) | {
    "agentId": "agent:b"
}
SIGNATURE = {"algorithm": "Ed25519", "keyId": "k1", "value": "c2ln"}
VALID["contract"]["signatures"] = {"agent:a": dict(SIGNATURE)}

MISSING = object()


def at(document: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A copy of ``document`` with ``path`` set to ``value`` (MISSING: removed)."""
    out = copy.deepcopy(document)
    target = out
    for step in path[:-1]:
        target = target[step]
    if value is MISSING:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


C = ("contract",)
A = ("acceptances", "agent:a")
S = ("acceptances", "agent:a", "signature")
CS = ("contract", "signatures", "agent:a")
T = ("responderTransport",)

LIST_TERMS = (
    "successCriteria", "allowedActions", "prohibitedActions", "allowedData", "prohibitedData",
    "evidenceRequirements", "delegationRules", "humanApprovalRequirements",
    "completionConditions", "cancellationConditions",
)  # fmt: skip
TIMES = ("createdAt", "updatedAt", "expiresAt")

# (path, bad value, the field the error must name)
CASES: list[tuple[tuple[Any, ...], Any, str]] = [
    # the document
    (("protocolVersion",), MISSING, "protocolVersion"),
    (("protocolVersion",), "0.2", "protocolVersion"),
    (("interactionId",), MISSING, "interactionId"),
    (("interactionId",), "not-a-uuid", "interactionId"),
    (("interactionId",), "11111111-1111-9111-8111-111111111111", "interactionId"),  # version 9
    (("initiatorAgentId",), MISSING, "initiatorAgentId"),
    (("initiatorAgentId",), "", "initiatorAgentId"),
    (("responderAgentId",), 7, "responderAgentId"),
    (("status",), MISSING, "status"),
    (("status",), "paused", "status"),
    (("contract",), MISSING, "contract"),
    (("contract",), [], "contract"),
    (("termsHash",), MISSING, "termsHash"),
    (("termsHash",), "", "termsHash"),
    (("acceptances",), MISSING, "acceptances"),
    (("acceptances",), [], "acceptances"),
    (("responderTransport",), MISSING, "responderTransport"),
    (("initiatorTransport",), "https://a.example", "initiatorTransport"),
    (("surprise",), 1, "surprise"),
    *[((name,), MISSING, name) for name in TIMES],
    *[((name,), "2027-01-15T08:00:00+01:00", name) for name in TIMES],  # Z only
    *[((name,), "2027-02-29T08:00:00Z", name) for name in TIMES],  # not a leap year
    # the terms
    ((*C, "protocolVersion"), "1.0", "contract.protocolVersion"),
    ((*C, "interactionId"), MISSING, "contract.interactionId"),
    ((*C, "interactionId"), "x", "contract.interactionId"),
    ((*C, "purpose"), MISSING, "contract.purpose"),
    ((*C, "purpose"), None, "contract.purpose"),
    ((*C, "parties"), [], "contract.parties"),
    ((*C, "parties"), ["agent:a", 2], "contract.parties[1]"),
    ((*C, "taskCategory"), 1.5, "contract.taskCategory"),
    ((*C, "requestedOutcome"), MISSING, "contract.requestedOutcome"),
    *[((*C, name), MISSING, f"contract.{name}") for name in LIST_TERMS],
    *[((*C, name), "browse", f"contract.{name}") for name in LIST_TERMS],
    *[((*C, name), ["ok", False], f"contract.{name}[1]") for name in LIST_TERMS],
    ((*C, "deadline"), "tomorrow", "contract.deadline"),
    ((*C, "deadline"), "2027-01-15T24:00:00Z", "contract.deadline"),
    ((*C, "factCheckingPolicy"), MISSING, "contract.factCheckingPolicy"),
    ((*C, "mediationPolicy"), "arbitration", "contract.mediationPolicy"),
    ((*C, "retentionDays"), MISSING, "contract.retentionDays"),
    ((*C, "retentionDays"), -1, "contract.retentionDays"),
    ((*C, "retentionDays"), 2.5, "contract.retentionDays"),
    ((*C, "retentionDays"), True, "contract.retentionDays"),
    ((*C, "retentionDays"), "30", "contract.retentionDays"),
    ((*C, "retentionDays"), 2**53, "contract.retentionDays"),
    ((*C, "signatures"), [], "contract.signatures"),
    ((*C, "extra"), "x", "contract.extra"),
    # a party's signature over the terms
    ((*CS, "algorithm"), "RS256", 'contract.signatures["agent:a"].algorithm'),
    ((*CS, "keyId"), "", 'contract.signatures["agent:a"].keyId'),
    ((*CS, "value"), MISSING, 'contract.signatures["agent:a"].value'),
    ((*CS, "x5c"), "x", 'contract.signatures["agent:a"].x5c'),
    # an acceptance
    ((*A, "agentId"), MISSING, 'acceptances["agent:a"].agentId'),
    ((*A, "agentId"), "", 'acceptances["agent:a"].agentId'),
    ((*A, "method"), "policy_auto_accept", 'acceptances["agent:a"].method'),
    ((*A, "termsHash"), MISSING, 'acceptances["agent:a"].termsHash'),
    ((*A, "acceptedAt"), "2027-01-15", 'acceptances["agent:a"].acceptedAt'),
    ((*A, "comment"), "x", 'acceptances["agent:a"].comment'),
    ((*S, "algorithm"), "ed25519", 'acceptances["agent:a"].signature.algorithm'),
    ((*S, "keyId"), MISSING, 'acceptances["agent:a"].signature.keyId'),
    ((*S, "value"), "", 'acceptances["agent:a"].signature.value'),
    # a transport
    ((*T, "protocol"), "A2A/0.3", "responderTransport.protocol"),
    ((*T, "protocolBinding"), "", "responderTransport.protocolBinding"),
    ((*T, "endpoint"), MISSING, "responderTransport.endpoint"),
    ((*T, "endpoint"), "not a uri", "responderTransport.endpoint"),
    ((*T, "managedBy"), "agent", "responderTransport.managedBy"),
]


def test_the_valid_document_passes_both() -> None:
    assert REFERENCE.is_valid(VALID)
    assert parse_interaction(VALID) == VALID


@pytest.mark.parametrize(
    ("path", "value", "field"), CASES, ids=[c[2] + "=" + repr(c[1])[:20] for c in CASES]
)
def test_every_field_is_checked_as_the_seed_says(
    path: tuple[Any, ...], value: Any, field: str
) -> None:
    document = at(VALID, path, value)
    assert not REFERENCE.is_valid(document)  # the seed refuses it too
    with pytest.raises(SchemaError) as refused:
        parse_interaction(document)
    assert field in [v.field for v in refused.value.violations], refused.value.violations


def test_every_violation_is_listed_at_once() -> None:
    document = at(at(VALID, ("status",), "x"), (*C, "retentionDays"), -1)
    with pytest.raises(SchemaError) as refused:
        parse_interaction(document)
    assert {v.field for v in refused.value.violations} == {"status", "contract.retentionDays"}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("initiatorTransport",), MISSING),  # optional
        ((*C, "deadline"), "2028-02-29T23:59Z"),  # a leap day; seconds optional
        ((*C, "deadline"), "2028-02-29T23:59:59.123456789Z"),  # any fraction
        ((*A, "signature"), MISSING),  # optional
        (("interactionId",), "00000000-0000-0000-0000-000000000000"),
        ((*C, "retentionDays"), 0),
        ((*C, "retentionDays"), 2**53 - 1),
        ((*T, "endpoint"), "urn:agent:b"),
        ((*C, "parties"), ["only one"]),  # the schema allows one; consistency checks say more
    ],
)
def test_what_the_seed_allows_passes(path: tuple[Any, ...], value: Any) -> None:
    document = at(VALID, path, value)
    assert REFERENCE.is_valid(document)
    parse_interaction(document)


def test_the_schema_defaults_are_filled_in_as_openclasp_does() -> None:
    terms = {k: v for k, v in VALID["contract"].items() if k != "signatures"}
    assert parse_terms(terms)["signatures"] == {}
    transport = {"protocol": "A2A/1.0", "endpoint": "https://b.example"}
    document = at(VALID, T, transport)
    assert parse_interaction(document)["responderTransport"]["protocolBinding"] == "JSONRPC"
