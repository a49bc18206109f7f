"""How contracts travel over A2A.

**OpenClasp's trust extension** (``TRUST_URI``): every message sent under a contract carries
``message.metadata[TRUST_URI] = {interactionId, termsHash, initiatorAgentId,
responderAgentId}``, exactly OpenClasp's shape, so its agents and accord understand each other.

**accord's contract extension** (``CONTRACTS_URI``) adds, all optional:

- in the card's ``capabilities.extensions``: ``params = {"agentId", "jwks"}``, the agent's id
  and its public keys (OKP/Ed25519 JWKS);
- on a message under a contract, ``message.metadata[CONTRACTS_URI] = {"action": …,
  "dataClasses": […]}``: the action (skill id, command) it asks for and the data classes it
  carries, which enforcement checks against the terms;
- the contract protocol between two agents: a message whose one part is a data part of media
  type ``NOTICE_MEDIA_TYPE``, ``{"kind": "proposal" | "acceptance", "interaction": {…}}`` or
  ``{"kind": "rejection" | "withdrawal" | "cancellation" | "completion", "interactionId": …,
  "reason": …}``, answered with a direct message whose data part is
  ``{"kind": "receipt", "interactionId": …, "status": …}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accord.contracts._errors import CONTRACT_MISMATCH, INVALID_DOCUMENT, ContractRefusal
from accord.contracts._schema import UUID
from accord.signing import _cards as cards
from accord.wire import UNSET, Message

TRUST_URI = "https://openclasp.vercel.app/extensions/trust/v0.1"
CONTRACTS_URI = cards.CONTRACTS_URI  # "urn:accord:a2a:contracts:v1"
NOTICE_MEDIA_TYPE = "application/vnd.accord.contract+json"
# The status sub-state of a task parked for a person's approval (under CONTRACTS_URI in the
# task's metadata and its status update's).
AWAITING_APPROVAL = "awaiting-approval"

DOCUMENT_NOTICES = ("proposal", "acceptance")
STATUS_NOTICES = ("rejection", "withdrawal", "cancellation", "completion")
MAX_REASON = 1000
MAX_ACTION = 200
MAX_DATA_CLASSES = 64


@dataclass(frozen=True, slots=True)
class Reference:
    """What a message under a contract says of it (OpenClasp's metadata)."""

    interaction_id: str
    terms_hash: str
    initiator: str
    responder: str

    def metadata(self) -> dict[str, str]:
        return {
            "interactionId": self.interaction_id,
            "termsHash": self.terms_hash,
            "initiatorAgentId": self.initiator,
            "responderAgentId": self.responder,
        }

    @classmethod
    def of(cls, document: dict[str, Any]) -> Reference:
        return cls(
            interaction_id=str(document["interactionId"]),
            terms_hash=str(document["termsHash"]),
            initiator=str(document["initiatorAgentId"]),
            responder=str(document["responderAgentId"]),
        )


@dataclass(frozen=True, slots=True)
class Asked:
    """What accord's metadata on a message asks for under the contract."""

    action: str | None = None
    data_classes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Notice:
    """A contract protocol message."""

    kind: str
    interaction_id: str
    document: dict[str, Any] | None = None
    reason: str = ""


def _mismatch(message: str) -> ContractRefusal:
    return ContractRefusal(CONTRACT_MISMATCH, message)


def reference_of(message: Message) -> Reference | None:
    """The contract a message is sent under, None when it names none; ContractRefusal
    (contract_mismatch) when the trust metadata is there but malformed."""
    metadata = message.metadata
    if metadata is UNSET:
        return None
    found = metadata.get(TRUST_URI)
    if found is None:
        return None
    if not isinstance(found, dict):
        raise _mismatch(f"metadata[{TRUST_URI!r}] must be an object")
    fields = ("interactionId", "termsHash", "initiatorAgentId", "responderAgentId")
    values = []
    for name in fields:
        value = found.get(name)
        if not isinstance(value, str) or not value:
            raise _mismatch(f"metadata[{TRUST_URI!r}].{name} must be a non-empty string")
        values.append(value)
    return Reference(*values)


def asked_of(message: Message) -> Asked:
    """accord's additions on a message under a contract (action, data classes)."""
    metadata = message.metadata
    found = metadata.get(CONTRACTS_URI) if metadata is not UNSET else None
    if found is None:
        return Asked()
    if not isinstance(found, dict):
        raise _mismatch(f"metadata[{CONTRACTS_URI!r}] must be an object")
    action = found.get("action")
    if action is not None and (not isinstance(action, str) or not 0 < len(action) <= MAX_ACTION):
        raise _mismatch(f"metadata[{CONTRACTS_URI!r}].action must be a short non-empty string")
    classes = found.get("dataClasses", [])
    if (
        not isinstance(classes, list)
        or len(classes) > MAX_DATA_CLASSES
        or not all(isinstance(c, str) for c in classes)
    ):
        raise _mismatch(f"metadata[{CONTRACTS_URI!r}].dataClasses must be a list of strings")
    return Asked(action=action, data_classes=tuple(classes))


def notice_of(message: Message) -> Notice | None:
    """The contract protocol notice a message carries, None for any other message;
    ContractRefusal(invalid_document) for a malformed one."""
    notices = [p for p in message.parts if p.media_type == NOTICE_MEDIA_TYPE]
    if not notices:
        return None

    def refuse(message: str) -> ContractRefusal:
        return ContractRefusal(INVALID_DOCUMENT, f"contract notice: {message}")

    if len(message.parts) != 1:
        raise refuse("a notice is a message of exactly one data part")
    data = notices[0].data
    if not isinstance(data, dict):
        raise refuse(f"the {NOTICE_MEDIA_TYPE} part must hold a JSON object")
    kind = data.get("kind")
    if kind in DOCUMENT_NOTICES:
        if set(data) != {"kind", "interaction"} or not isinstance(data["interaction"], dict):
            raise refuse(f'a {kind} holds exactly "kind" and "interaction" (an object)')
        document = data["interaction"]
        interaction_id = document.get("interactionId")
        return Notice(kind, interaction_id if isinstance(interaction_id, str) else "", document)
    if kind in STATUS_NOTICES:
        if not set(data) <= {"kind", "interactionId", "reason"}:
            raise refuse(f'a {kind} holds only "kind", "interactionId" and "reason"')
        interaction_id = data.get("interactionId")
        reason = data.get("reason", "")
        if not isinstance(interaction_id, str) or UUID.fullmatch(interaction_id) is None:
            raise refuse("interactionId must be a UUID")
        if not isinstance(reason, str) or len(reason) > MAX_REASON:
            raise refuse(f"reason must be a string of at most {MAX_REASON} characters")
        return Notice(kind, interaction_id, reason=reason)
    kinds = ", ".join((*DOCUMENT_NOTICES, *STATUS_NOTICES))
    raise refuse(f"kind must be one of {kinds}")


def under_contract(
    document: dict[str, Any], action: str | None = None, data_classes: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The metadata of a message sent under the contract ``document``: OpenClasp's reference,
    and accord's action and data classes when given (merge it into the message's metadata)."""
    metadata: dict[str, Any] = {TRUST_URI: Reference.of(document).metadata()}
    asked: dict[str, Any] = {}
    if action is not None:
        asked["action"] = action
    if data_classes:
        asked["dataClasses"] = list(data_classes)
    if asked:
        metadata[CONTRACTS_URI] = asked
    return metadata


def notice_data(notice: Notice) -> dict[str, Any]:
    if notice.document is not None:
        return {"kind": notice.kind, "interaction": notice.document}
    data: dict[str, Any] = {"kind": notice.kind, "interactionId": notice.interaction_id}
    if notice.reason:
        data["reason"] = notice.reason
    return data


def receipt_data(interaction_id: str, status: str) -> dict[str, Any]:
    return {"kind": "receipt", "interactionId": interaction_id, "status": status}
