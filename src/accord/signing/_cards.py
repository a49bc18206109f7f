"""Agent card signatures, as A2A 1.0 §8.4 specifies them.

The signed payload is the RFC 8785 form of the card's JSON without ``signatures``, the JSON
following protobuf field presence (fields at their defaults omitted unless ``optional`` and
set) — what accord's codec writes. A signature is a JWS with a detached payload:
``{"protected": b64url(header), "signature": b64url(sig)}``, the protected header
``{"alg": "EdDSA", "typ": "JOSE", "kid": …}`` and the signing input
``b64url(header) "." b64url(payload)``.

The official a2a-sdk canonicalizes a little differently: it also drops every empty string,
list and object (§8.4 keeps REQUIRED ones; a security requirement without scopes is such an
empty object). When the two forms of a card differ, accord signs both (two signatures, the
same key: A2A allows several), so both kinds of verifier accept the card; a verifier here
accepts a signature over either form, so cards signed by the SDK verify too.

Keys: a verifier finds the signing key by ``kid`` among the keys it trusts — a key store of
its own, or the JWKS the card itself publishes in accord's contract extension (which proves
the card is intact and consistent with its own keys, not who published it). A key outside its
validity window does not verify. A ``jku`` is never fetched.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from accord.signing._canonical import CanonicalError, b64url, b64url_decode, canonical
from accord.signing._keys import AgentKey, InvalidKeyError, KeySet

# The card extension whose params publish the agent's keys: accord's contract extension
# (accord.contracts._wire names it too).
CONTRACTS_URI = "urn:accord:a2a:contracts:v1"
ALGORITHM = "EdDSA"
MAX_SIGNATURES = 16


def payload(card: dict[str, Any]) -> bytes:
    """The §8.4 payload: the card without ``signatures``, canonical."""
    return canonical({k: v for k, v in card.items() if k != "signatures"})


def sdk_payload(card: dict[str, Any]) -> bytes:
    """The official SDK's payload: the same, with empty strings, lists and objects dropped
    at every depth."""
    cleaned = _drop_empty({k: v for k, v in card.items() if k != "signatures"})
    return canonical(cleaned if cleaned is not None else {})


def _drop_empty(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {k: c for k, v in value.items() if (c := _drop_empty(v)) is not None}
        return kept or None
    if isinstance(value, list):
        items = [c for v in value if (c := _drop_empty(v)) is not None]
        return items or None
    if isinstance(value, str) and not value:
        return None
    return value


def sign(card: dict[str, Any], key: AgentKey) -> list[dict[str, str]]:
    """Signatures for ``card`` (its JSON, as the codec writes it) with ``key``: one over the
    §8.4 payload, and a second over the official SDK's when that differs (a card whose
    security requirements list no scopes, say), so that the SDK's verifier accepts it too."""
    header = b64url(
        json.dumps(
            {"alg": ALGORITHM, "typ": "JOSE", "kid": key.kid}, separators=(",", ":")
        ).encode()
    )
    signatures = []
    for body in dict.fromkeys((payload(card), sdk_payload(card))):
        signing_input = f"{header}.{b64url(body)}".encode("ascii")
        signatures.append({"protected": header, "signature": b64url(key.sign(signing_input))})
    return signatures


def published_keys(card: dict[str, Any]) -> tuple[str, KeySet] | None:
    """The agent id and keys a card publishes in accord's contract extension, if any."""
    extensions = card.get("capabilities", {}).get("extensions", [])
    for extension in extensions if isinstance(extensions, list) else []:
        if not isinstance(extension, dict) or extension.get("uri") != CONTRACTS_URI:
            continue
        params = extension.get("params")
        if not isinstance(params, dict):
            return None
        try:
            keys = KeySet.from_jwks(params.get("jwks"))
        except InvalidKeyError:
            return None
        agent_id = params.get("agentId")
        return (agent_id if isinstance(agent_id, str) else "", keys)
    return None


@dataclass(frozen=True, slots=True)
class CardCheck:
    """What a card's signatures say: ``unsigned``, ``valid`` (with the key that verified),
    or ``invalid`` (with why the last one failed)."""

    status: Literal["unsigned", "valid", "invalid"]
    kid: str = ""
    reason: str = ""

    @property
    def summary(self) -> str:
        if self.status == "valid":
            return f"valid (key {self.kid})"
        if self.status == "unsigned":
            return "unsigned"
        return f"INVALID: {self.reason}"


def verify(
    card: dict[str, Any],
    keys: KeySet | None,
    now_ms: int,
    *,
    alternates: Sequence[dict[str, Any]] = (),
) -> CardCheck:
    """Check the card's signatures against ``keys`` (None: the keys the card publishes).
    One signature that verifies makes the card valid. ``alternates`` are other renderings
    of the same card to try as payloads: the card as served, say, beside the card as accord's
    codec writes it (fields another implementation writes at their defaults)."""
    signatures = card.get("signatures") or []
    if not signatures or not isinstance(signatures, list):
        return CardCheck("unsigned")
    if keys is None:
        published = published_keys(card)
        keys = published[1] if published is not None else KeySet()
    try:
        payloads = {
            body for each in (card, *alternates) for body in (payload(each), sdk_payload(each))
        }
    except CanonicalError as exc:
        return CardCheck("invalid", reason=f"the card has no canonical form: {exc}")
    reason = "no signature"
    for signature in signatures[:MAX_SIGNATURES]:
        outcome = _check_one(signature, payloads, keys, now_ms)
        if isinstance(outcome, AgentKey):
            return CardCheck("valid", kid=outcome.kid)
        reason = outcome
    return CardCheck("invalid", reason=reason)


def _check_one(signature: Any, payloads: set[bytes], keys: KeySet, now_ms: int) -> AgentKey | str:
    """The key that verifies ``signature``, or why it does not."""
    if not isinstance(signature, dict):
        return "a signature is not an object"
    protected = signature.get("protected")
    value = signature.get("signature")
    if not isinstance(protected, str) or not isinstance(value, str):
        return "a signature lacks protected or signature"
    try:
        header = json.loads(b64url_decode(protected))
        raw = b64url_decode(value)
    except (ValueError, UnicodeDecodeError):
        return "a signature is not base64url JSON"
    if not isinstance(header, dict):
        return "the protected header is not an object"
    if "crit" in header:
        return "the protected header has critical parameters accord does not know"
    if header.get("alg") != ALGORITHM:
        return f"algorithm {header.get('alg')!r} is not {ALGORITHM}"
    kid = header.get("kid")
    key = keys.get(kid) if isinstance(kid, str) else None
    if key is None:
        return f"key {kid!r} is not among the trusted keys"
    if not key.valid_at(now_ms):
        return f"key {kid!r} is outside its validity window"
    for body in payloads:
        if key.verifies(raw, f"{protected}.{b64url(body)}".encode("ascii")):
            return key
    return f"the signature by key {kid!r} does not match the card"
