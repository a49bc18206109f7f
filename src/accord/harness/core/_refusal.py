"""The error a request refused by the harness's rules answers with, on every binding.

A participant's request that their role does not allow (a watcher completing or canceling, a
participant who is not an admin changing participants or channels) and a message a
``message.received`` hook refuses are refused with **UnsupportedOperation** (JSON-RPC
``-32004``, HTTP 400, gRPC ``FAILED_PRECONDITION``): the error tiny-harness answers its
refusals with, which the official SDKs map to their ``UnsupportedOperationError``. Who the
caller is — an identity the request asserts against its credentials, the harness's own id —
is authentication's, and stays ``PermissionDenied`` as everywhere on the server; a stranger
gets ``TaskNotFound``, as for an unknown task (docs/harness.md, "Refusals").
"""

from __future__ import annotations

from accord.wire import A2AError, ErrorKind

REFUSAL = ErrorKind.UNSUPPORTED_OPERATION


def refusal(message: str, metadata: dict[str, str] | None = None) -> A2AError:
    """The harness refuses: ``message`` says which rule; ``metadata`` goes in ErrorInfo."""
    return A2AError(REFUSAL, message, metadata or {})
