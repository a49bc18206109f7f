"""The A2A service: the eleven operations once for every binding (JSON-RPC, HTTP+JSON, gRPC,
the command surface) and for the dashboard, the bounds on what a request may carry, and the
agent card built from the settings."""
