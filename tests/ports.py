"""A free TCP port for a test's server process, which must be told its port before it starts."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
