"""Who a request speaks for.

With authentication configured the participant is the authenticated principal, and a request
that asserts anybody else (``X-Participant-Id`` or ``message.metadata.participant_id``) is
refused. In open mode nothing is authenticated, so the assertion is all there is, as with
tiny-harness clients: the header wins, the message's metadata is taken without one, both must
agree, and a message asserting nobody is refused.
"""

from __future__ import annotations

from accord.core.caller import Caller
from accord.harness.wire import PARTICIPANT_METADATA
from accord.wire.errors import A2AError, ErrorKind, invalid_params
from accord.wire.model import Message

# Bounds on a self-asserted id: it is stored in every task it joins.
MAX_ID_LENGTH = 256


def claimed(message: Message) -> str | None:
    """The participant the message's metadata names (None: none, or not a string)."""
    metadata = message.metadata
    if not isinstance(metadata, dict):
        return None
    value = metadata.get(PARTICIPANT_METADATA)
    return value if isinstance(value, str) and value else None


def sender(caller: Caller, message: Message) -> str:
    """The participant a message comes from; raises the refusal."""
    in_message = claimed(message)
    if caller.authenticated:
        _check_assertion(caller, caller.participant, "the X-Participant-Id header")
        _check_assertion(caller, in_message, "message.metadata.participant_id")
        return caller.identity
    header = caller.participant or None
    if header is not None and in_message is not None and header != in_message:
        raise invalid_params(
            "message.metadata.participant_id", "the message names a different participant"
        )
    chosen = header or in_message
    if chosen is None:
        raise invalid_params(
            "message.metadata.participant_id",
            "no participant asserted (send X-Participant-Id or metadata.participant_id)",
        )
    if len(chosen) > MAX_ID_LENGTH or not chosen.isprintable():
        raise invalid_params(
            "message.metadata.participant_id",
            f"a participant id is at most {MAX_ID_LENGTH} printable characters",
        )
    return chosen


def reader(caller: Caller) -> str | None:
    """The participant a read (GetTask, subscribe, cancel, push configs) comes from; None
    when it asserts nobody, which sees no harness task."""
    if caller.authenticated:
        _check_assertion(caller, caller.participant, "the X-Participant-Id header")
        return caller.identity
    return caller.participant or None


def _check_assertion(caller: Caller, asserted: str | None, where: str) -> None:
    if asserted and asserted != caller.identity:
        raise A2AError(
            ErrorKind.PERMISSION_DENIED,
            f"{where} names {asserted!r}, but the request is authenticated as {caller.identity!r}",
        )
