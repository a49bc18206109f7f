"""The harness's sans-I/O conversation core: harness state and an input (a message, a control,
a command, a tool result) in, a decision and events out — no sockets, no store, no clock."""
