"""The interaction contract document, checked exactly as its JSON Schema says
(``interaction-contract.schema.json`` beside this module, OpenClasp's FederatedInteraction).

:func:`parse_interaction` and :func:`parse_terms` take decoded JSON and return a normalized copy
or raise :class:`SchemaError` listing every violation with its field (``contract.parties[0]``,
``acceptances["agent:a"].acceptedAt``). Unknown fields are refused everywhere
(``additionalProperties: false``). The defaults the schema declares are filled in first, as
OpenClasp's parser does: a contract without ``signatures`` gets ``{}``, a transport without
``protocolBinding`` gets ``"JSONRPC"``. Nothing else is changed: strings and timestamps are
kept as given (the terms hash is computed over them), absent optional fields stay absent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from accord.errors import AccordError
from accord.wire import A2AError, ErrorKind, FieldViolation

PROTOCOL_VERSION = "0.1"
STATUSES = ("pending", "active", "rejected", "expired", "cancelled", "completed")
METHODS = ("oauth_installation", "oauth_account", "ed25519")
MEDIATION_POLICIES = ("none", "mutual_consent")
TRANSPORT_PROTOCOL = "A2A/1.0"
DEFAULT_BINDING = "JSONRPC"
MAX_SAFE_INTEGER = 9007199254740991

# The schema's own patterns (zod's uuid, versions 1-8 plus nil and max; zod's date-time: UTC
# with Z only, seconds and fractions optional). ASCII: Python's \d would take other digits.
UUID = re.compile(
    r"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-"
    r"[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$",
    re.ASCII,
)
DATE_TIME = re.compile(
    r"^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|"
    r"\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|"
    r"(?:02)-(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z))$",
    re.ASCII,
)
# format "uri": an absolute URI (RFC 3986: a scheme, a colon, no spaces or controls).
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s\x00-\x1f\x7f<>\"{}|\\^`]*$", re.ASCII)

TERMS_FIELDS = (
    "protocolVersion",
    "interactionId",
    "purpose",
    "parties",
    "taskCategory",
    "requestedOutcome",
    "successCriteria",
    "allowedActions",
    "prohibitedActions",
    "allowedData",
    "prohibitedData",
    "evidenceRequirements",
    "delegationRules",
    "humanApprovalRequirements",
    "factCheckingPolicy",
    "mediationPolicy",
    "retentionDays",
    "completionConditions",
    "cancellationConditions",
    "signatures",
)
TERMS_OPTIONAL = ("deadline",)


def terms_template() -> dict[str, Any]:
    """A complete terms file to edit, every field of the schema's ``contract`` with a value of
    its kind, but ``interactionId`` and ``parties`` (a proposal fills them in) and the
    optional ``deadline``: ``accord contracts terms-template``."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "purpose": "Research a market for a new product",
        "taskCategory": "research",
        "requestedOutcome": "A brief of at most two pages, with its sources",
        "successCriteria": ["Primary sources included", "Delivered within a week"],
        "allowedActions": ["browse"],
        "prohibitedActions": ["purchase"],
        "allowedData": ["public"],
        "prohibitedData": ["secrets", "personal"],
        "evidenceRequirements": ["a link to every source"],
        "delegationRules": ["no delegation without the initiator's consent"],
        "humanApprovalRequirements": [],
        "factCheckingPolicy": "important_claims",
        "mediationPolicy": "mutual_consent",
        "retentionDays": 30,
        "completionConditions": ["the brief delivered"],
        "cancellationConditions": ["either party, with a reason"],
        "signatures": {},
    }


TERMS_LISTS = (
    "successCriteria",
    "allowedActions",
    "prohibitedActions",
    "allowedData",
    "prohibitedData",
    "evidenceRequirements",
    "delegationRules",
    "humanApprovalRequirements",
    "completionConditions",
    "cancellationConditions",
)
INTERACTION_FIELDS = (
    "protocolVersion",
    "interactionId",
    "initiatorAgentId",
    "responderAgentId",
    "status",
    "contract",
    "termsHash",
    "acceptances",
    "responderTransport",
    "createdAt",
    "updatedAt",
    "expiresAt",
)
INTERACTION_OPTIONAL = ("initiatorTransport",)
ACCEPTANCE_FIELDS = ("agentId", "method", "termsHash", "acceptedAt")
SIGNATURE_FIELDS = ("algorithm", "keyId", "value")
TRANSPORT_FIELDS = ("protocol", "protocolBinding", "endpoint")


class SchemaError(AccordError, ValueError):
    """A document the schema refuses; ``violations`` names every failing field."""

    def __init__(self, violations: list[FieldViolation]) -> None:
        self.violations = violations
        super().__init__(describe(violations))

    def as_a2a(self, prefix: str = "") -> A2AError:
        """The same violations as an A2A InvalidParams error, fields under ``prefix``."""
        violations = [
            FieldViolation(_join(prefix, v.field) if prefix else v.field, v.description)
            for v in self.violations
        ]
        shown = SchemaError(violations)
        return A2AError(ErrorKind.INVALID_PARAMS, str(shown), violations=violations)


# The violations a message names one by one; past them, how many more (``violations`` has all).
SHOWN_VIOLATIONS = 40


def describe(violations: list[FieldViolation]) -> str:
    """Every violation in one line: the missing fields together (``missing: contract.purpose,
    contract.taskCategory``), then each other one (``contract.retentionDays: expected an
    integer``), up to :data:`SHOWN_VIOLATIONS` fields."""
    shown = violations[:SHOWN_VIOLATIONS]
    missing = [v.field or "document" for v in shown if v.description == "missing"]
    parts = [f"missing: {', '.join(missing)}"] if missing else []
    parts += [
        f"{v.field or 'document'}: {v.description}" for v in shown if v.description != "missing"
    ]
    rest = len(violations) - len(shown)
    return "; ".join(parts) + (f" (and {rest} more)" if rest else "")


def _join(prefix: str, field: str) -> str:
    if not field:
        return prefix
    return f"{prefix}{field}" if field.startswith("[") else f"{prefix}.{field}"


def _key(path: str, key: str) -> str:
    """``path.key``, or ``path["key"]`` for a key that is not a plain name (an agent id)."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}" if path else key
    quoted = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'{path}["{quoted}"]'


class _Check:
    """Collects the violations of one document."""

    def __init__(self) -> None:
        self.violations: list[FieldViolation] = []

    def fail(self, path: str, description: str) -> None:
        self.violations.append(FieldViolation(path, description))

    def obj(
        self,
        value: Any,
        path: str,
        required: tuple[str, ...],
        optional: tuple[str, ...] = (),
    ) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.fail(path, f"expected an object, got {json_kind(value)}")
            return None
        for name in required:
            if name not in value:
                self.fail(_key(path, name), "missing")
        known = (*required, *optional)
        for name in value:
            if name not in known:
                self.fail(_key(path, str(name)), "unknown field")
        return value

    def string(self, value: Any, path: str, *, min_length: int = 0) -> bool:
        if not isinstance(value, str):
            self.fail(path, f"expected a string, got {json_kind(value)}")
            return False
        if len(value) < min_length:
            self.fail(path, "must not be empty")
            return False
        return True

    def const(self, value: Any, path: str, expected: str) -> None:
        if value != expected or not isinstance(value, str):
            self.fail(path, f"expected {expected!r}, got {_shown(value)}")

    def enum(self, value: Any, path: str, allowed: tuple[str, ...]) -> None:
        if not isinstance(value, str) or value not in allowed:
            self.fail(path, f"expected one of {', '.join(allowed)}; got {_shown(value)}")

    def pattern(self, value: Any, path: str, regex: re.Pattern[str], what: str) -> None:
        if self.string(value, path) and regex.fullmatch(value) is None:
            self.fail(path, f"expected {what}, got {_shown(value)}")

    def strings(self, value: Any, path: str, *, min_items: int = 0) -> None:
        if not isinstance(value, list):
            self.fail(path, f"expected a list of strings, got {json_kind(value)}")
            return
        if len(value) < min_items:
            self.fail(path, f"expected at least {min_items} item(s)")
        for index, item in enumerate(value):
            self.string(item, f"{path}[{index}]")

    def integer(self, value: Any, path: str, low: int, high: int) -> Any:
        # JSON Schema's integer is any number without a fraction (30.0 is one); booleans
        # are not numbers.
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(path, f"expected an integer, got {json_kind(value)}")
            return value
        if isinstance(value, float):
            if not value.is_integer():
                self.fail(path, f"expected an integer, got {value!r}")
                return value
            value = int(value)
        if not low <= value <= high:
            self.fail(path, f"expected an integer from {low} to {high}, got {value}")
        return value

    def signature(self, value: Any, path: str) -> None:
        fields = self.obj(value, path, SIGNATURE_FIELDS)
        if fields is None:
            return
        if "algorithm" in fields:
            self.const(fields["algorithm"], _key(path, "algorithm"), "Ed25519")
        for name in ("keyId", "value"):
            if name in fields:
                self.string(fields[name], _key(path, name), min_length=1)

    def map_of(self, value: Any, path: str, each: Callable[[Any, str], None]) -> None:
        if not isinstance(value, dict):
            self.fail(path, f"expected an object, got {json_kind(value)}")
            return
        for key, item in value.items():
            each(item, _key(path, str(key)))


def json_kind(value: Any) -> str:
    """What a JSON value is, for an error: "a string", "null", "an object" …"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    return json_kind(value)


def _terms(check: _Check, value: Any, path: str) -> dict[str, Any] | None:
    if isinstance(value, dict) and "signatures" not in value:
        value = {**value, "signatures": {}}  # the schema's default
    fields = check.obj(value, path, TERMS_FIELDS, TERMS_OPTIONAL)
    if fields is None:
        return None
    out = dict(fields)

    def at(name: str) -> str:
        return _key(path, name)

    if "protocolVersion" in fields:
        check.const(fields["protocolVersion"], at("protocolVersion"), PROTOCOL_VERSION)
    if "interactionId" in fields:
        check.pattern(fields["interactionId"], at("interactionId"), UUID, "a UUID")
    for name in ("purpose", "taskCategory", "requestedOutcome", "factCheckingPolicy"):
        if name in fields:
            check.string(fields[name], at(name))
    if "parties" in fields:
        check.strings(fields["parties"], at("parties"), min_items=1)
    for name in TERMS_LISTS:
        if name in fields:
            check.strings(fields[name], at(name))
    if "deadline" in fields:
        check.pattern(fields["deadline"], at("deadline"), DATE_TIME, "a UTC date-time ending in Z")
    if "mediationPolicy" in fields:
        check.enum(fields["mediationPolicy"], at("mediationPolicy"), MEDIATION_POLICIES)
    if "retentionDays" in fields:
        out["retentionDays"] = check.integer(
            fields["retentionDays"], at("retentionDays"), 0, MAX_SAFE_INTEGER
        )
    if "signatures" in fields:
        check.map_of(fields["signatures"], at("signatures"), check.signature)
    return out


def _acceptance(check: _Check, value: Any, path: str) -> None:
    fields = check.obj(value, path, ACCEPTANCE_FIELDS, ("signature",))
    if fields is None:
        return
    for name in ("agentId", "termsHash"):
        if name in fields:
            check.string(fields[name], _key(path, name), min_length=1)
    if "method" in fields:
        check.enum(fields["method"], _key(path, "method"), METHODS)
    if "acceptedAt" in fields:
        check.pattern(
            fields["acceptedAt"], _key(path, "acceptedAt"), DATE_TIME, "a UTC date-time ending in Z"
        )
    if "signature" in fields:
        check.signature(fields["signature"], _key(path, "signature"))


def _transport(check: _Check, value: Any, path: str) -> Any:
    if isinstance(value, dict) and "protocolBinding" not in value:
        value = {**value, "protocolBinding": DEFAULT_BINDING}  # the schema's default
    fields = check.obj(value, path, TRANSPORT_FIELDS)
    if fields is None:
        return value
    if "protocol" in fields:
        check.const(fields["protocol"], _key(path, "protocol"), TRANSPORT_PROTOCOL)
    if "protocolBinding" in fields:
        check.string(fields["protocolBinding"], _key(path, "protocolBinding"), min_length=1)
    if "endpoint" in fields:
        check.pattern(fields["endpoint"], _key(path, "endpoint"), URI, "an absolute URI")
    return value


def parse_terms(value: Any) -> dict[str, Any]:
    """A contract's terms (the schema's ``contract``), normalized; SchemaError otherwise."""
    check = _Check()
    out = _terms(check, value, "")
    if check.violations:
        raise SchemaError(check.violations)
    assert out is not None
    return out


def parse_interaction(value: Any) -> dict[str, Any]:
    """A whole interaction document, normalized; SchemaError listing every violation."""
    check = _Check()
    fields = check.obj(value, "", INTERACTION_FIELDS, INTERACTION_OPTIONAL)
    if fields is None:
        raise SchemaError(check.violations)
    out = dict(fields)
    if "protocolVersion" in fields:
        check.const(fields["protocolVersion"], "protocolVersion", PROTOCOL_VERSION)
    if "interactionId" in fields:
        check.pattern(fields["interactionId"], "interactionId", UUID, "a UUID")
    for name in ("initiatorAgentId", "responderAgentId", "termsHash"):
        if name in fields:
            check.string(fields[name], name, min_length=1)
    if "status" in fields:
        check.enum(fields["status"], "status", STATUSES)
    if "contract" in fields:
        terms = _terms(check, fields["contract"], "contract")
        if terms is not None:
            out["contract"] = terms
    if "acceptances" in fields:
        check.map_of(fields["acceptances"], "acceptances", lambda v, p: _acceptance(check, v, p))
    for name in ("initiatorTransport", "responderTransport"):
        if name in fields:
            out[name] = _transport(check, fields[name], name)
    for name in ("createdAt", "updatedAt", "expiresAt"):
        if name in fields:
            check.pattern(fields[name], name, DATE_TIME, "a UTC date-time ending in Z")
    if check.violations:
        raise SchemaError(check.violations)
    return out
