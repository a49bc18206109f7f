"""``--verbose``: every HTTP exchange of a client command, on standard error, as httpie's ``-v``
and curl's ``-v`` show them — the request (line, headers, body) and the response (status,
headers, body as it arrives: a stream event by event) — with secrets masked.

Masked: the value of a header or query parameter whose name speaks of credentials
(``Authorization``, ``X-API-Key``, cookies, anything with ``auth``, ``token``, ``key``,
``secret``, ``password`` or ``session`` in it; an ``Authorization`` keeps its scheme), and in a
JSON body (or an SSE ``data:`` line) every string under a key such as ``token``,
``credentials``, ``password``, ``secret``, ``apiKey``, ``accessToken``. The masked
value is ``••••``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, TextIO

import httpx

MASK = "••••"
_SECRET_HEADER_WORDS = ("auth", "token", "key", "secret", "password", "cookie", "session")
_SECRET_FIELDS = {
    "token",
    "credentials",
    "password",
    "secret",
    "apikey",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "clientsecret",
    "authorization",
    "privatekey",
}


def mask_header(name: str, value: str) -> str:
    """``value``, masked if header ``name`` carries a credential (a scheme word is kept)."""
    lowered = name.lower()
    if not any(word in lowered for word in _SECRET_HEADER_WORDS):
        return value
    scheme, sep, _ = value.partition(" ")
    if lowered.endswith("authorization") and sep and scheme.isalpha():
        return f"{scheme} {MASK}"
    return MASK


def mask_url(url: httpx.URL) -> str:
    """``url`` with the values of query parameters that carry credentials masked."""
    params = url.params.multi_items()
    if not any(_secret_field(name) or mask_header(name, "x") == MASK for name, _ in params):
        return str(url)
    masked = [
        (name, MASK if _secret_field(name) or mask_header(name, "x") == MASK else value)
        for name, value in params
    ]
    return str(url.copy_with(params=masked)).replace("%E2%80%A2", "•")


def _secret_field(key: str) -> bool:
    return key.replace("_", "").replace("-", "").lower() in _SECRET_FIELDS


def mask_json(value: Any) -> tuple[Any, bool]:
    """``value`` with the strings under secret keys masked, and whether any was."""
    if isinstance(value, dict):
        changed = False
        out: dict[str, Any] = {}
        for key, item in value.items():
            if _secret_field(str(key)) and isinstance(item, str) and item:
                out[key], changed = MASK, True
            else:
                out[key], inner = mask_json(item)
                changed = changed or inner
        return out, changed
    if isinstance(value, list):
        items = [mask_json(item) for item in value]
        return [item for item, _ in items], any(changed for _, changed in items)
    return value, False


def mask_line(line: str) -> str:
    """A body line (a JSON document, or an SSE ``data:`` line of one) with secrets masked."""
    prefix, payload = ("data:", line[5:]) if line.startswith("data:") else ("", line)
    try:
        parsed = json.loads(payload)
    except ValueError:
        return line
    masked, changed = mask_json(parsed)
    if not changed:
        return line
    space = " " if prefix and payload.startswith(" ") else ""
    return prefix + space + json.dumps(masked, ensure_ascii=False)


class _Tee(httpx.AsyncByteStream):
    """A response body passed on unchanged, each complete line also shown as it arrives."""

    def __init__(self, inner: httpx.AsyncByteStream, show: Callable[[str], None]) -> None:
        self.inner = inner
        self.show = show
        self.pending = b""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.pending += chunk
            *lines, self.pending = self.pending.split(b"\n")
            self._show(lines)
            yield chunk
        self._flush()

    def _show(self, lines: Iterable[bytes]) -> None:
        for line in lines:
            self.show(mask_line(line.decode("utf-8", "replace").rstrip("\r")))

    def _flush(self) -> None:
        if self.pending:
            self._show([self.pending])
            self.pending = b""

    async def aclose(self) -> None:
        self._flush()
        await self.inner.aclose()


class ExchangePrinter:
    """httpx event hooks that print each exchange to ``out`` (``>`` the request, ``<`` the
    response)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out

    def _line(self, mark: str, text: str) -> None:
        stream = self.out or sys.stderr
        stream.write(f"{mark} {text}".rstrip() + "\n")
        stream.flush()

    def _headers(self, mark: str, headers: httpx.Headers) -> None:
        for name, value in headers.multi_items():
            self._line(mark, f"{name}: {mask_header(name, value)}")

    async def request(self, request: httpx.Request) -> None:
        self._line(">", f"{request.method} {mask_url(request.url)} HTTP/1.1")
        self._headers(">", request.headers)
        self._line(">", "")
        try:
            body = request.content
        except httpx.RequestNotRead:  # a streamed upload: not shown
            self._line(">", "(streamed body)")
            return
        for line in body.decode("utf-8", "replace").splitlines():
            self._line(">", mask_line(line))

    async def response(self, response: httpx.Response) -> None:
        reason = f" {response.reason_phrase}" if response.reason_phrase else ""
        self._line("<", f"{response.http_version} {response.status_code}{reason}")
        self._headers("<", response.headers)
        self._line("<", "")
        if response.headers.get("content-encoding", "identity").lower() != "identity":
            self._line("<", "(compressed body: not shown)")
        elif isinstance(response.stream, httpx.AsyncByteStream):
            response.stream = _Tee(response.stream, lambda text: self._line("<", text))


def verbose_http_client(out: TextIO | None = None) -> httpx.AsyncClient:
    """An HTTP client (as the client library makes its own) that prints every exchange."""
    printer = ExchangePrinter(out)
    return httpx.AsyncClient(
        follow_redirects=True,
        event_hooks={"request": [printer.request], "response": [printer.response]},
    )
