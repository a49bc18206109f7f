"""The remote hook protocol, as tiny-harness's remote hooks speak it: JSON-RPC 2.0, one
request per hook point.

The request: ``{"jsonrpc": "2.0", "id": N, "method": "<operation>.<phase>", "params":
{"context": {…}}}``. The result: ``null`` (pass), ``{"context": {…}}`` (the replacement, of
the same shape) or ``{"abort": {"reason": "refused" | "policy" | "invalid"}}`` (a
``"message"`` beside the reason is shown in the refusal). Anything else — a JSON-RPC error,
a reply that is not JSON-RPC, an unknown reason, a context that does not fit — is a
failure: the operation is refused naming the hook, never passed.
"""

from __future__ import annotations

from typing import Any

import msgspec

from accord.harness.hooks._base import AbortReason, Context, HookAbort, HookFailure

MAX_ABORT_MESSAGE = 500  # characters of a remote abort's message a participant is shown


def request_body(request_id: int, point: str, context: Context) -> bytes:
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "id": request_id, "method": point, "params": {"context": context}}
    )


def parse_reply(hook: str, context: Context, raw: bytes, request_id: int) -> Context | None:
    """The replacement a reply carries (None: pass); raises HookAbort or HookFailure."""
    try:
        reply = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        raise HookFailure(hook, "answered with something other than JSON") from None
    if (
        not isinstance(reply, dict)
        or reply.get("jsonrpc") != "2.0"
        or reply.get("id") != request_id
        or ("result" in reply) == ("error" in reply)
    ):
        raise HookFailure(hook, "answered with something other than its JSON-RPC reply")
    if "error" in reply:
        error = reply["error"]
        code = error.get("code") if isinstance(error, dict) else None
        raise HookFailure(hook, f"answered with JSON-RPC error {code!r}")
    return parse_result(hook, context, reply["result"])


def parse_result(hook: str, context: Context, result: Any) -> Context | None:
    """A reply's result: null (None: pass), {"context"} (the replacement) or {"abort"}
    (raised); anything else is a HookFailure."""
    if result is None:
        return None
    if not isinstance(result, dict) or len(result) != 1 or not {"context", "abort"} & set(result):
        raise HookFailure(hook, 'answered with a result other than null, {"context"} or {"abort"}')
    if "abort" in result:
        raise _abort(hook, result["abort"])
    try:
        replaced: Context = msgspec.convert(result["context"], type(context))
    except msgspec.ValidationError as exc:
        raise HookFailure(hook, f"answered with a context that does not fit: {exc}") from None
    return replaced


def _abort(hook: str, abort: Any) -> HookAbort:
    reason = abort.get("reason") if isinstance(abort, dict) else None
    if not isinstance(reason, str) or reason not in AbortReason.__members__.values():
        return HookFailure(hook, f"aborted with an unknown reason {reason!r}")
    message = abort.get("message")
    if not isinstance(message, str) or not message.strip():
        message = f"by hook {hook!r}"
    return HookAbort(message[:MAX_ABORT_MESSAGE], reason)
