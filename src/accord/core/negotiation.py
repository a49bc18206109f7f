"""Checks every request passes before its command runs: protocol version and extensions
(A2A §3.2.6, §3.6)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from accord.wire import A2AError, AgentExtension, ErrorKind

SUPPORTED_VERSIONS = frozenset({"1.0"})


def check_version(requested: str | None) -> A2AError | None:
    """None when the requested version is served. Only Major.Minor counts (``1.0.3`` is
    ``1.0``); a missing version means 0.3, which accord does not serve."""
    if requested in SUPPORTED_VERSIONS:  # what every current client sends
        return None
    value = (requested or "").strip()
    major_minor = ".".join(value.split(".")[:2]) if value else "0.3"
    if major_minor in SUPPORTED_VERSIONS:
        return None
    return A2AError(
        ErrorKind.VERSION_NOT_SUPPORTED,
        f"A2A version {value or '(none, meaning 0.3)'} is not supported; use 1.0",
        {"requestedVersion": value, "supportedVersions": ",".join(sorted(SUPPORTED_VERSIONS))},
    )


def parse_extensions(header_values: Iterable[str]) -> list[str]:
    """URIs from one or more comma-separated ``A2A-Extensions`` values, in order, unique."""
    seen: dict[str, None] = {}
    for value in header_values:
        for uri in value.split(","):
            uri = uri.strip()
            if uri:
                seen.setdefault(uri, None)
    return list(seen)


@dataclass(frozen=True, slots=True)
class ExtensionCheck:
    activated: list[str]
    error: A2AError | None = None


def check_extensions(
    requested: Sequence[str], declared: Sequence[AgentExtension]
) -> ExtensionCheck:
    """Refuse when a required extension is not requested; activate the requested ones the
    agent declares (unknown ones are ignored, as the spec allows)."""
    requested_set = set(requested)
    missing = [ext.uri for ext in declared if ext.required and ext.uri not in requested_set]
    if missing:
        error = A2AError(
            ErrorKind.EXTENSION_SUPPORT_REQUIRED,
            f"this agent requires the extension(s) {', '.join(missing)}",
            {"extensions": ",".join(missing)},
        )
        return ExtensionCheck([], error)
    known = {ext.uri for ext in declared}
    return ExtensionCheck([uri for uri in requested if uri in known])
