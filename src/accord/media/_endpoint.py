"""``/media``: serving a task's files, and uploading one before the message that carries it.

- ``GET /media/{id}`` (and ``HEAD``): the file's bytes, to whoever may read its task, as
  GetTask decides it (GetTask's own read: its grant, the tenant rule, the agent's access
  check — the harness's participants); to its uploader while no message took it.
  Anyone else, an unknown id, another tenant's file: the same 404 answer, byte for byte.
  ``Range: bytes=…`` (one range) gets 206; ``Content-Type`` is the file's,
  ``Content-Disposition`` ``inline`` for raster images and ``attachment`` for the rest,
  with a safe file name; ``nosniff`` and a sandboxing CSP ride along.
- ``POST /media?filename=NAME`` with the file as the body (its ``Content-Type`` the file's):
  stored unbound for the caller, answered ``201 {"url", "id", "mediaType", "filename",
  "size", "sha256"}``; a message's ``url`` part naming that URL then carries the file.
  A body over ``max_file_bytes`` is refused from its Content-Length before a byte is read,
  and while it arrives otherwise (PAYLOAD_TOO_LARGE, 413).
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote

from accord.core import Caller
from accord.errors import AccordError
from accord.media._ingest import (
    MEDIA_PATH,
    MediaIngest,
    file_type,
    owner_of,
    safe_filename,
    valid_id,
)
from accord.media._tables import MediaFile, MediaStore
from accord.server import JSON, Binding, Request, Send, respond, rest_error
from accord.wire import A2AError, ErrorKind

SEND_GRANT = "a2a.tasks.SendMessage"
READ_GRANT = "a2a.tasks.GetTask"
INLINE = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_RANGE = re.compile(r"bytes=(\d*)-(\d*)\Z")
# The one answer for an unknown id, another tenant's file, a file the caller may not read.
UNKNOWN = json.dumps(
    rest_error(A2AError(ErrorKind.TASK_NOT_FOUND, "no such media")), ensure_ascii=False
).encode()


class _Unknown(AccordError):
    pass


def content_disposition(file: MediaFile) -> bytes:
    kind = "inline" if file.media_type in INLINE else "attachment"
    name = file.filename or f"{file.id}"
    ascii_name = "".join(c if c.isascii() and c.isprintable() and c not in '"\\;' else "_"
                         for c in name)  # fmt: skip
    return (f"{kind}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}").encode(
        "latin-1"
    )


def byte_range(header: str | None, size: int) -> tuple[int, int] | bool | None:
    """``(start, end)`` (end exclusive) of a ``Range`` header; None: the whole file (no
    header, or one this does not serve: several ranges, another unit); False: not
    satisfiable."""
    if not header:
        return None
    matched = _RANGE.match(header.strip().replace(" ", ""))
    if matched is None:
        return None
    first, last = matched.groups()
    if not first and not last:
        return None
    if len(first) > 18 or len(last) > 18:
        return False
    if not first:  # the last N bytes
        count = int(last)
        if count == 0 or size == 0:
            return False
        return max(size - count, 0), size
    start = int(first)
    end = min(int(last) + 1, size) if last else size
    if start >= size or (last and int(last) < start):
        return False
    return start, end


class MediaEndpoint:
    def __init__(self, ingest: MediaIngest, binding: Binding) -> None:
        self.ingest = ingest
        self.files: MediaStore = ingest.files
        self.binding = binding
        self.service = binding.service

    def handles(self, path: str) -> bool:
        return path == MEDIA_PATH or path.startswith(MEDIA_PATH + "/")

    async def handle(self, request: Request, send: Send) -> None:
        try:
            caller = self.binding.caller(request)
            path = request.path.rstrip("/")
            if path == MEDIA_PATH and request.method == "POST":
                await self._upload(request, send, caller)
                return
            if request.method not in ("GET", "HEAD") or path == MEDIA_PATH:
                raise A2AError(
                    ErrorKind.METHOD_NOT_FOUND, f"no operation at {request.method} {path}"
                )
            try:
                file = await self._readable(request, caller, path[len(MEDIA_PATH) + 1 :])
            except _Unknown:
                await respond(send, 404, UNKNOWN, JSON)
                return
            await self._serve(request, send, file)
        except A2AError as error:
            body = json.dumps(rest_error(error), ensure_ascii=False).encode()
            await respond(send, error.kind.http_status, body, JSON)

    async def _readable(self, request: Request, caller: Caller, media_id: str) -> MediaFile:
        """The file, if the caller may read it; else _Unknown, whatever the reason."""
        if not valid_id(media_id):
            raise _Unknown
        try:
            reader = self.service.reader(caller, request.query_value("tenant"))
        except A2AError:
            raise _Unknown from None
        file = await self.files.get(reader.tenant, media_id)
        if file is None:
            raise _Unknown
        if not file.task_id:  # not taken by a message yet: its uploader's alone
            if file.owner != owner_of(caller):
                raise _Unknown
            return file
        try:  # GetTask's own read: the grant, the tenant, the agent's access check
            self.binding.authorize(reader.caller, READ_GRANT)
            await self.service.engine.get_task(file.task_id, reader.caller, 0)
        except A2AError:
            raise _Unknown from None
        return file

    async def _serve(self, request: Request, send: Send, file: MediaFile) -> None:
        size = file.size
        span = byte_range(request.headers.get("range"), size)
        headers = [
            (b"content-type", file.media_type.encode("latin-1")),
            (b"content-disposition", content_disposition(file)),
            (b"accept-ranges", b"bytes"),
            (b"etag", f'"{file.sha256}"'.encode()),
            (b"cache-control", b"private, max-age=0"),
            (b"x-content-type-options", b"nosniff"),
            (b"content-security-policy", b"default-src 'none'; sandbox"),
        ]
        if span is False:
            body = json.dumps(
                rest_error(A2AError(ErrorKind.INVALID_REQUEST, "range not satisfiable"))
            ).encode()
            await respond(send, 416, body, JSON, [(b"content-range", f"bytes */{size}".encode())])
            return
        status, start, end = 200, 0, size
        if isinstance(span, tuple):
            status, (start, end) = 206, span
            headers.append((b"content-range", f"bytes {start}-{end - 1}/{size}".encode()))
        headers.append((b"content-length", str(end - start).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        if request.method == "HEAD" or end == start:
            await send({"type": "http.response.body", "body": b""})
            return
        async for chunk in self.files.read(file.id, start, end):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    async def _upload(self, request: Request, send: Send, caller: Caller) -> None:
        self.binding.authorize(caller, SEND_GRANT)
        caller = self.service.reader(caller, request.query_value("tenant")).caller
        settings = self.ingest.settings
        # (refused from Content-Length before a byte is read; bounded while it arrives)
        data = await request.body(settings.max_file_bytes)
        name = safe_filename(request.query_value("filename") or "")
        media_type = file_type(request.headers.get("content-type", ""), name)
        self.ingest.check("body", data, media_type)
        file = await self.ingest.store(caller, data, media_type, name)
        body = {
            "url": self.ingest.url_of(file),
            "id": file.id,
            "mediaType": file.media_type,
            "filename": file.filename,
            "size": file.size,
            "sha256": file.sha256,
        }
        await respond(send, 201, json.dumps(body, ensure_ascii=False).encode(), JSON)
