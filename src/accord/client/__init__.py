"""accord's A2A client: ``Client`` (async), ``SyncClient`` (blocking), and their errors.

    async with Client.connect("http://localhost:8000") as client:
        task = await client.send("hello")
        async for event in client.stream("hello again"):
            ...

See docs/client.md.
"""

from accord.client._card import check_signature, fetch_card, select_interface
from accord.client._client import Client, text_message
from accord.client._credentials import (
    ApiKey,
    BearerToken,
    CombinedCredentials,
    CredentialsProvider,
    StaticHeaders,
)
from accord.client._errors import *  # noqa: F403
from accord.client._errors import (
    A2AClientError,
    ClientError,
    InternalError,
    ResourceExhaustedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from accord.client._errors import __all__ as _errors_all
from accord.client._options import CallOptions, ResumePolicy, RetryPolicy, Timeouts
from accord.client._sse import ServerSentEvent, SSEParser
from accord.client._sync import SyncClient
from accord.client._transport import (
    CallMeta,
    StreamItem,
    Transport,
    TransportContext,
    register_transport,
)
from accord.client._urls import check_agent_url, expand_shorthand

__all__ = [
    "ApiKey",
    "BearerToken",
    "CallMeta",
    "CallOptions",
    "Client",
    "CombinedCredentials",
    "CredentialsProvider",
    "ResumePolicy",
    "RetryPolicy",
    "SSEParser",
    "ServerSentEvent",
    "StaticHeaders",
    "StreamItem",
    "SyncClient",
    "Timeouts",
    "Transport",
    "TransportContext",
    "fetch_card",
    "register_transport",
    "select_interface",
    "text_message",
    *_errors_all,
    "A2AClientError",
    "ClientError",
    "InternalError",
    "ResourceExhaustedError",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "UnsupportedOperationError",
    "check_agent_url",
    "check_signature",
    "expand_shorthand",
]
