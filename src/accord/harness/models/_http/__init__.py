"""accord's own HTTP/1.1 client for model calls (the OpenAI-compatible and Anthropic
adapters' default, ``client = "accord"``): a POST of JSON, its answer streamed, over a
kept-alive connection pool, TLS and http:// proxies; its errors in accord's error tree.

- accord.harness.models._http._response: one answer parsed from its bytes, bounded (no I/O)
- accord.harness.models._http._proxy: which proxy the environment names for an endpoint
- accord.harness.models._http._connection: one connection, its read timeout, an answer's body
- accord.harness.models._http._client: the pool, connecting (TLS, a proxy's tunnel), a call
"""

from accord.harness.models._http._client import HttpClient
from accord.harness.models._http._connection import Response
from accord.harness.models._http._errors import (
    BrokenAnswer,
    ConnectFailed,
    HTTPError,
    RefusedAnswer,
    StatusError,
    TimedOut,
)
from accord.harness.models._http._proxy import Proxy, UnsupportedProxy, bypassed, proxy_for
from accord.harness.models._http._response import Limits, ResponseReader

__all__ = [
    "BrokenAnswer",
    "ConnectFailed",
    "HTTPError",
    "HttpClient",
    "Limits",
    "Proxy",
    "RefusedAnswer",
    "Response",
    "ResponseReader",
    "StatusError",
    "TimedOut",
    "UnsupportedProxy",
    "bypassed",
    "proxy_for",
]
