"""Who a request speaks for.

With authentication configured the participant is the authenticated principal, and a request
that asserts anybody else (``X-Participant-Id`` or ``message.metadata.participant_id``) is
refused. In open mode nothing is authenticated, so the assertion is all there is, as with
tiny-harness clients: the header wins, the message's metadata is taken without one, both must
agree, and a message asserting nobody is refused.

The harness's own id is nobody's to assert: the harness is trusted (it briefs tasks fully) and
a participant of every task it works on, so a request speaking as it must come from the
harness itself (:data:`HARNESS_ACTOR`, an actor no authentication grants), never a client.
"""

from __future__ import annotations

from accord.core import Caller
from accord.harness._wire import PARTICIPANT_METADATA
from accord.harness.core._bounds import MAX_ID
from accord.harness.core._fields import valid_id
from accord.wire import A2AError, ErrorKind, Message, invalid_params, task_not_found

# The actor of the requests the harness makes to its own engine (accord.harness.delegation
# .internal): no authentication grants it (accord.auth knows a closed set).
HARNESS_ACTOR = "accord.harness.Self"


def claimed(message: Message) -> str | None:
    """The participant the message's metadata names (None: none, or not a string)."""
    metadata = message.metadata
    if not isinstance(metadata, dict):
        return None
    value = metadata.get(PARTICIPANT_METADATA)
    return value if isinstance(value, str) and value else None


def sender(caller: Caller, message: Message, harness: str, task_id: str | None = None) -> str:
    """The participant a message (to ``task_id``, None for a new task) comes from; raises
    the refusal. ``harness`` is the harness's own id, which only the harness speaks as."""
    in_message = claimed(message)
    if caller.authenticated:
        _check_assertion(caller, caller.participant, "the X-Participant-Id header")
        _check_assertion(caller, in_message, "message.metadata.participant_id")
        return _not_the_harness(caller, caller.identity, harness, task_id)
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
    if not valid_id(chosen):
        raise invalid_params(
            "message.metadata.participant_id",
            f"a participant id is at most {MAX_ID} printable characters",
        )
    return _not_the_harness(caller, chosen, harness, task_id)


def reader(caller: Caller, harness: str) -> str | None:
    """The participant a read (GetTask, subscribe, cancel, push configs) comes from; None
    when it asserts nobody — or the harness, from a client — which sees no harness task."""
    if caller.authenticated:
        _check_assertion(caller, caller.participant, "the X-Participant-Id header")
        found: str | None = caller.identity
    else:
        found = caller.participant or None
    if found == harness and not is_harness(caller):
        return None
    return found


def is_harness(caller: Caller) -> bool:
    """Whether the request is the harness's own (to its engine), not a client's."""
    return caller.may(HARNESS_ACTOR)


def _not_the_harness(caller: Caller, participant: str, harness: str, task_id: str | None) -> str:
    if participant != harness or is_harness(caller):
        return participant
    if task_id is not None:  # (to a task: as a stranger is answered, telling nothing of it)
        raise task_not_found(task_id)
    raise A2AError(
        ErrorKind.PERMISSION_DENIED,
        f"{participant!r} is the harness's own participant id: no client speaks as the harness",
    )


def _check_assertion(caller: Caller, asserted: str | None, where: str) -> None:
    if asserted and asserted != caller.identity:
        raise A2AError(
            ErrorKind.PERMISSION_DENIED,
            f"{where} names {asserted!r}, but the request is authenticated as {caller.identity!r}",
        )
