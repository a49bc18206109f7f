"""One HTTP/1.1 response read from its bytes, with no I/O: its status, headers and body
pieces, fixed-length, chunked or until the connection closes. Parsing is httptools (llhttp,
already the server front's parser); this module adds the bounds — the head's size, one
header's size, the number of headers, the status line — and what the connection may do next
(serve another request, or close). Interim answers (1xx) are skipped; a compressed one is
refused (the client asks for none: ``Accept-Encoding: identity``)."""

from __future__ import annotations

from dataclasses import dataclass

import httptools

from accord.harness.models._http._errors import BrokenAnswer, HTTPError, RefusedAnswer


@dataclass(frozen=True, slots=True)
class Limits:
    max_head_bytes: int = 64 * 1024  # the status line and headers together
    max_header_bytes: int = 16 * 1024  # one header, its name and value
    max_headers: int = 100
    max_status_bytes: int = 1024  # the status line's reason phrase
    max_error_body: int = 64 * 1024  # what is read of an error status's body


class ResponseReader:
    """Bytes of one response in (:meth:`feed`, :meth:`end` at the connection's end); what
    they say out: ``status``, ``headers`` once ``head_done``, the body's pieces in
    ``body`` (taken with :meth:`take`), ``complete`` when the body is whole."""

    __slots__ = (
        "_fed",
        "_head_size",
        "_interim",
        "_limits",
        "_parser",
        "body",
        "buffered",
        "complete",
        "head_done",
        "headers",
        "keep_alive",
        "status",
        "until_close",
    )

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self._parser = httptools.HttpResponseParser(self)
        self._fed = 0  # bytes fed while the head was not yet whole
        self._head_size = 0
        self._interim = False  # reading a 1xx answer, which the real one follows
        self.status = 0
        self.headers: dict[str, str] = {}
        self.head_done = False
        self.complete = False
        self.keep_alive = False
        self.until_close = False  # the body ends when the connection does
        self.body: list[bytes] = []
        self.buffered = 0

    def feed(self, data: bytes) -> None:
        """Reads ``data``; BrokenAnswer when it is not HTTP/1.1, RefusedAnswer past a bound."""
        if not self.head_done:
            self._fed += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            if isinstance(exc.__context__, HTTPError):
                raise exc.__context__ from None
            raise BrokenAnswer(f"the answer could not be read: {exc.__context__!r}") from None
        except httptools.HttpParserUpgrade:
            raise BrokenAnswer("the endpoint switched protocols") from None
        except httptools.HttpParserError as exc:
            raise BrokenAnswer(f"the endpoint's answer is not HTTP/1.1: {exc}") from None
        if not self.head_done and self._fed > self._limits.max_head_bytes:
            raise RefusedAnswer(
                f"the answer's head is longer than {self._limits.max_head_bytes} bytes"
            )

    def end(self) -> None:
        """The connection ended: the body is whole if it was to end so, else BrokenAnswer."""
        if self.complete:
            return
        if self.head_done and self.until_close:
            self.complete = True
            return
        said = "its body" if self.head_done else "its head"
        raise BrokenAnswer(f"the connection closed in the middle of the answer ({said})")

    def take(self) -> bytes:
        """The body's bytes read since the last take."""
        body = self.body
        data = body[0] if len(body) == 1 else b"".join(body)
        body.clear()
        self.buffered = 0
        return data

    # --- httptools' callbacks ------------------------------------------------------------

    def on_status(self, status: bytes) -> None:
        if len(status) > self._limits.max_status_bytes:
            raise RefusedAnswer(
                f"the answer's status line is longer than {self._limits.max_status_bytes} bytes"
            )

    def on_header(self, name: bytes, value: bytes) -> None:
        size = len(name) + len(value)
        limits = self._limits
        if size > limits.max_header_bytes:
            raise RefusedAnswer(
                f"a header of the answer is longer than {limits.max_header_bytes} bytes"
            )
        self._head_size += size + 4
        if self._head_size > limits.max_head_bytes:
            raise RefusedAnswer(f"the answer's head is longer than {limits.max_head_bytes} bytes")
        if len(self.headers) >= limits.max_headers:
            raise RefusedAnswer(f"the answer has more than {limits.max_headers} headers")
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        self.headers[key] = f"{self.headers[key]}, {text}" if key in self.headers else text

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:  # (interim: 100 Continue, 103 Early Hints)
            self._interim = True
            return
        encoding = self.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise RefusedAnswer(f"the answer is compressed ({encoding}), which was not asked for")
        self.head_done = True
        self.status = status
        self.keep_alive = self._parser.should_keep_alive()
        chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        if not chunked and "content-length" not in self.headers and self.status not in (204, 304):
            self.until_close = True
            self.keep_alive = False

    def on_body(self, body: bytes) -> None:
        self.body.append(body)
        self.buffered += len(body)

    def on_message_complete(self) -> None:
        if self._interim:  # (its head counted against the bounds; the next answer is the one)
            self._interim = False
            self.headers = {}
            return
        self.complete = True
