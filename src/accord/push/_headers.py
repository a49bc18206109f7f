"""The parts of a push config that travel as HTTP header values — its ``token`` and its
``authentication`` scheme and credentials — and keeping them out of every error text.

A value with CR, LF, NUL or another control character, with a character outside ASCII, or
with spaces at either end cannot be sent: the HTTP client refuses it, and its refusal quotes
the whole header, secret included. Such values are refused when a config is registered
(:func:`check_config`); a config stored before that check existed fails at delivery without
the value being quoted (:func:`unsendable`), and error texts written before it are cleaned
when shown (:func:`scrub`).
"""

from __future__ import annotations

from collections.abc import Iterator

from accord.wire import UNSET, TaskPushNotificationConfig, invalid_params

SENDABLE = "printable ASCII with no space at either end"

REDACTED = "[redacted]"
_MIN_SCRUBBED = 4  # shorter values are no secret worth mangling every error text for


def sendable(value: str) -> bool:
    """Whether ``value`` can be an HTTP header value as it is."""
    return value.isascii() and value.isprintable() and value == value.strip()


def _header_fields(config: TaskPushNotificationConfig) -> Iterator[tuple[str, str]]:
    """(field path, value) of what becomes a header value; empty values send nothing."""
    if config.token:
        yield "token", config.token
    auth = config.authentication
    if auth is not UNSET:
        yield "authentication.scheme", auth.scheme
        if auth.credentials:
            yield "authentication.credentials", auth.credentials


def check_config(config: TaskPushNotificationConfig, prefix: str = "") -> None:
    """Registration: InvalidParams naming the first field that cannot be sent (never its
    value). ``prefix`` places the config in the request (``configuration.
    taskPushNotificationConfig.`` for one sent inline with a message)."""
    for field, value in _header_fields(config):
        if not sendable(value):
            raise invalid_params(
                prefix + field, f"must be {SENDABLE}: it is sent as an HTTP header value"
            )


def unsendable(config: TaskPushNotificationConfig) -> str | None:
    """Delivery: the field of a stored config that cannot be sent, if any."""
    for field, value in _header_fields(config):
        if not sendable(value):
            return field
    return None


def scrub(text: str, config: TaskPushNotificationConfig) -> str:
    """``text`` without the config's header values, as written or as a ``repr`` shows them
    (an HTTP library's error quotes ``b'Bearer …'`` with escapes)."""
    for _, value in _header_fields(config):
        if len(value) < _MIN_SCRUBBED:
            continue
        for form in (value, repr(value)[1:-1], repr(value.encode("utf-8", "replace"))[2:-1]):
            text = text.replace(form, REDACTED)
    return text
