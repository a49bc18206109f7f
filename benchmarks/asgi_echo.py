"""The ceiling: a bare ASGI app that decodes a JSON-RPC request and answers with its params.

Served by the same stack as ``accord serve`` (by default accord's HTTP/1.1 front on uvloop and
httptools; ``--http uvicorn`` for uvicorn with uvloop and httptools, no access log), so its
requests per second are what Python HTTP reaches on the machine before any A2A work.

    python benchmarks/asgi_echo.py --port 8100 [--http uvicorn]
"""

from __future__ import annotations

import argparse
from typing import Any

import msgspec
import uvicorn

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode
_HEADERS = [(b"content-type", b"application/json")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    request = _decode(body)
    answer = _encode({"jsonrpc": "2.0", "id": request.get("id"), "result": request.get("params")})
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": answer})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--http", choices=["accord", "uvicorn"], default="accord")
    args = parser.parse_args()
    if args.http == "accord":
        from accord.server import _runner as runner

        runner.run(app, args.host, args.port)
        return
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
        lifespan="on",
    )


if __name__ == "__main__":
    main()
