"""The HTTP bindings: accord's HTTP/1.1 front, the ASGI application, JSON-RPC and HTTP+JSON, SSE,
the agent card, health checks, the access log and /metrics. They translate requests into
the operations of accord.service and answers back, and decide nothing themselves."""
