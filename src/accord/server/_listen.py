"""Listening addresses: how a host and port are written in a URL, and binding the sockets a
server listens on before anything else starts, so that a busy port is one clear error and not
a failure after the engine already ran."""

from __future__ import annotations

import contextlib
import errno
import socket

from accord.errors import AccordError

# Bind addresses that mean "every interface": a URL needs an address a client can reach.
WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


class ListenError(AccordError, OSError):
    """A listening socket could not be bound; the message says where and why, in one line."""


def host_port(host: str, port: int) -> str:
    """``host:port`` as URLs and gRPC targets write it: an IPv6 address in brackets."""
    if ":" in host and not host.startswith("["):
        return f"[{host}]:{port}"
    return f"{host}:{port}"


def reachable_host(host: str) -> str:
    """The address a client on this machine uses for a server bound to ``host``."""
    return WILDCARD_HOSTS.get(host, host)


def check_free(host: str, port: int, what: str) -> None:
    """Raise :class:`ListenError` unless ``port`` can be bound on ``host`` (for a server that
    binds by itself, later: gRPC)."""
    for sock in bind(host, port, what):
        sock.close()


def bind(host: str, port: int, what: str) -> list[socket.socket]:
    """Bound (not yet listening) TCP sockets on every address ``host`` resolves to, the way
    asyncio's ``create_server`` binds them. Port 0 picks a free port, the same on every
    address. ``what`` ("HTTP", "gRPC") names the server in the error."""
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise ListenError(f"cannot listen on {host!r} ({what}): {exc.strerror}") from None
    sockets: list[socket.socket] = []
    seen: set[tuple[int, str | int]] = set()
    try:
        for family, kind, proto, _, address in infos:
            if (family, address[0]) in seen:
                continue
            seen.add((family, address[0]))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                # As asyncio does: "::" is IPv6 only, 0.0.0.0 is bound separately if wanted.
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind((address[0], port, *address[2:]))
            except OSError as exc:
                raise ListenError(
                    f"cannot listen on {host_port(str(address[0]), port)} ({what}): {_reason(exc)}"
                ) from None
            port = sock.getsockname()[1]  # port 0: the other addresses take the same one
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()
        raise
    return sockets


def adopt(fds: list[int]) -> list[socket.socket]:
    """The listening sockets another process bound and handed down as the file descriptors
    ``fds`` (``accord serve --processes N``: every process serves the same port). Raises
    :class:`ListenError` for a descriptor that is not a TCP socket."""
    sockets: list[socket.socket] = []
    for fd in fds:
        try:
            sock = socket.socket(fileno=fd)
        except OSError as exc:
            raise ListenError(f"inherited descriptor {fd}: not a socket ({_reason(exc)})") from None
        if sock.type != socket.SOCK_STREAM:
            raise ListenError(f"inherited descriptor {fd}: not a TCP socket")
        sock.setblocking(False)
        sockets.append(sock)
    return sockets


def _reason(exc: OSError) -> str:
    reason = (exc.strerror or str(exc)).lower()
    if exc.errno == errno.EADDRINUSE:
        return f"{reason} (is another server running there?)"
    if exc.errno == errno.EACCES:
        return f"{reason} (ports below 1024 need privileges)"
    return reason
