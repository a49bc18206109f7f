"""The HTTP bindings: accord's HTTP/1.1 front, the ASGI application, JSON-RPC and HTTP+JSON, SSE,
the agent card, health checks, the access log and /metrics. They translate requests into
the operations of accord.service and answers back, and decide nothing themselves."""

from accord.server._admin import AdminEndpoint
from accord.server._app import A2AApplication, create_app
from accord.server._auth import Authenticator, NoAuthentication
from accord.server._binding import Binding
from accord.server._browsers import BrowserPolicy
from accord.server._errors import from_wire_error, rest_error, unexpected_error
from accord.server._event_ids import event_number
from accord.server._failures import log_unexpected
from accord.server._h1 import Limits
from accord.server._health import Health
from accord.server._http import JSON, Receive, Request, Scope, Send, respond, until_disconnected
from accord.server._listen import ListenError, adopt, bind, check_free, host_port, reachable_host
from accord.server._metrics_endpoint import MetricsEndpoint
from accord.server._node_metrics import NodeMetrics
from accord.server._runner import run
from accord.server._sse import STREAM_HEADERS

__all__ = [
    "JSON",
    "STREAM_HEADERS",
    "A2AApplication",
    "AdminEndpoint",
    "Authenticator",
    "Binding",
    "BrowserPolicy",
    "Health",
    "Limits",
    "ListenError",
    "MetricsEndpoint",
    "NoAuthentication",
    "NodeMetrics",
    "Receive",
    "Request",
    "Scope",
    "Send",
    "adopt",
    "bind",
    "check_free",
    "create_app",
    "event_number",
    "from_wire_error",
    "host_port",
    "log_unexpected",
    "reachable_host",
    "respond",
    "rest_error",
    "run",
    "unexpected_error",
    "until_disconnected",
]
