"""Why a contract refuses something: one exception with a reason code, the vocabulary every
refusal uses (the A2A error's ErrorInfo metadata, the operators' API, the log line)."""

from __future__ import annotations

from accord.errors import AccordError
from accord.wire import A2AError, ErrorKind, FieldViolation

# Enforcement of a message under a contract.
CONTRACT_UNKNOWN = "contract_unknown"  # no such interaction here, or none the sender is party to
CONTRACT_MISMATCH = "contract_mismatch"  # terms hash or parties differ from the stored ones
CONTRACT_NOT_ACTIVE = "contract_not_active"  # pending, rejected, cancelled or completed
CONTRACT_EXPIRED = "contract_expired"  # past expiresAt or the terms' deadline
NOT_A_PARTY = "not_a_party"  # not a party to what it asks (named before any contract is read)
ACTION_OUTSIDE_CONTRACT = "action_outside_contract"  # not allowed, prohibited, or unnamed
PROHIBITED_DATA = "prohibited_data"  # a declared data class the terms do not allow
# Documents and proofs.
INVALID_DOCUMENT = "invalid_document"  # the schema refuses it, or it contradicts itself
TERMS_HASH_MISMATCH = "terms_hash_mismatch"  # termsHash is not the hash of the terms
INVALID_ACCEPTANCE = "invalid_acceptance"  # forged, replayed, unknown or expired key
INVALID_SIGNATURE = "invalid_signature"  # a party's signature over the terms fails
# The lifecycle.
NOT_PERMITTED = "not_permitted"  # this party may not make this move
CONTRACT_CONFLICT = "contract_conflict"  # the contract is not in a state for this move
CONTRACT_EXISTS = "contract_exists"  # proposing an interaction id that is taken
# The other agent.
PEER_UNREACHABLE = "peer_unreachable"
PEER_REFUSED = "peer_refused"

_INVALID_INPUT = frozenset({INVALID_DOCUMENT, TERMS_HASH_MISMATCH})


class ContractRefusal(AccordError):
    """A refusal with its reason code; ``violations`` name fields for invalid documents;
    ``note`` is for this server's log only, never sent."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        interaction_id: str = "",
        violations: list[FieldViolation] | None = None,
        note: str = "",
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.interaction_id = interaction_id
        self.violations = violations or []
        self.note = note

    def as_a2a(self) -> A2AError:
        """The A2A error a peer gets: InvalidParams for a malformed document, else
        PermissionDenied; the code in ErrorInfo's metadata as ``contractReason``."""
        kind = (
            ErrorKind.INVALID_PARAMS if self.code in _INVALID_INPUT else ErrorKind.PERMISSION_DENIED
        )
        metadata = {"contractReason": self.code}
        if self.interaction_id:
            metadata["interactionId"] = self.interaction_id
        return A2AError(kind, str(self), metadata=metadata, violations=list(self.violations))


def unknown_contract(
    interaction_id: str, *, exists: bool = False, who: str = ""
) -> ContractRefusal:
    """``contract_unknown``: no contract ``interaction_id`` here. A caller who is not the other
    party of a contract that exists (``exists``; ``who`` names it) gets exactly this too, so
    that naming a contract tells a stranger nothing of it: not that it exists, not who its
    parties are. Only the log line says which it was."""
    note = f"it exists; {who or 'the sender'} is not its other party" if exists else ""
    return ContractRefusal(
        CONTRACT_UNKNOWN,
        f"no contract {interaction_id} here",
        interaction_id=interaction_id,
        note=note,
    )
