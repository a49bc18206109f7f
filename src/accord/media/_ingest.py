"""Taking a message's files: the media gate.

Every SendMessage passes the engine's gates before anything of it is stored. A message with
no file part costs one look at its parts. For each file part, the gate:

- takes its bytes: ``raw``; or ``url``: a URL of this server's ``/media/{id}`` naming a file
  the same caller uploaded (``POST /media``) and no message took yet, or a file of the task
  the message continues (named again); any other URL fetched through the SSRF guard
  (``[media] fetch_urls``; off: left as it is, a link);
- refuses, before anything is stored, a file over ``max_file_bytes`` or files over
  ``max_message_bytes`` together (PAYLOAD_TOO_LARGE), a media type ``accepted`` does not
  list (CONTENT_TYPE_NOT_SUPPORTED), a WAV longer than ``max_audio_seconds``;
- stores it (accord.media._tables, unbound) and rewrites the part in the request to a
  ``url`` on this server (file name and media type kept; the bytes gone), with
  ``metadata[MEDIA_KEY] = {id, size, sha256}``.

Once the engine took the message (``Screened.admitted``) the files are bound to its task:
from then on they are served to whoever may read the task. A file no message took is
forgotten after an hour.
"""

from __future__ import annotations

import hashlib
import mimetypes
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, urlsplit

from accord.agents import Screened
from accord.core import Caller
from accord.media._fetch import FetchFailed, fetch, too_large
from accord.media._settings import MediaSettings
from accord.media._tables import UNBOUND_TTL_MS, MediaFile, MediaStore
from accord.push import AddressPolicy, Guard
from accord.wire import UNSET, A2AError, ErrorKind, Part, SendMessageRequest, invalid_params

MEDIA_KEY = "accord.media/file"  # part metadata: {"id", "size", "sha256"} of a stored file
MEDIA_PATH = "/media"
_ID = re.compile(r"[A-Za-z0-9_-]{16,64}\Z")
_ESSENCE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*\Z")
_SWEEP_EVERY_MS = 60_000


def new_media_id() -> str:
    return secrets.token_urlsafe(18)


def valid_id(text: str) -> bool:
    return _ID.match(text) is not None


def owner_of(caller: Caller) -> str:
    """Who stored a file, as it is compared later: the authenticated identity; in open
    mode, the participant the request asserts."""
    if caller.authenticated:
        return f"id:{caller.identity}"
    return f"open:{caller.participant}"


def essence(media_type: str) -> str:
    """``type/subtype`` of a media type, lower-cased; '' when it is not one."""
    found = media_type.partition(";")[0].strip().lower()
    return found if _ESSENCE.match(found) else ""


def file_type(declared: str, filename: str, fetched: str = "") -> str:
    """A file's media type: as the part declares it, else as the server it came from said,
    else guessed from its name, else ``application/octet-stream``."""
    for candidate in (declared, fetched):
        found = essence(candidate)
        if found:
            return found
    guessed = mimetypes.guess_type(filename)[0] if filename else None
    return essence(guessed or "") or "application/octet-stream"


def safe_filename(name: str) -> str:
    """The last path segment of ``name``, without control characters, at most 200 chars."""
    base = PurePosixPath(name.replace("\\", "/")).name
    cleaned = "".join(c for c in base if c.isprintable() and c not in '"')
    return cleaned.strip()[:200]


def wav_seconds(data: bytes) -> float | None:
    """A WAV file's length from its header (None: not a WAV this can read)."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    offset, byte_rate, size = 12, 0, -1
    while offset + 8 <= len(data):
        kind = data[offset : offset + 4]
        length = int.from_bytes(data[offset + 4 : offset + 8], "little")
        if kind == b"fmt " and offset + 20 <= len(data):
            byte_rate = int.from_bytes(data[offset + 16 : offset + 20], "little")
        elif kind == b"data":
            size = length
            break
        offset += 8 + length + (length & 1)
    if not byte_rate or size < 0:
        return None
    return size / byte_rate


@dataclass
class MediaIngest:
    """The media gate: stores a message's files and rewrites their parts to this server."""

    files: MediaStore
    settings: MediaSettings
    base_url: str  # this server's public URL (the card's)
    clock: Callable[[], int] = field(default=lambda: time.time_ns() // 1_000_000)
    guard: Guard | None = None
    _swept_ms: int = 0

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        if self.guard is None:
            self.guard = Guard(
                AddressPolicy(
                    self.settings.allow_hosts, subject="media fetches", setting="media.allow_hosts"
                )
            )

    def url_of(self, file: MediaFile) -> str:
        url = f"{self.base_url}{MEDIA_PATH}/{file.id}"
        return f"{url}?tenant={quote(file.tenant, safe='')}" if file.tenant else url

    def own_id(self, url: str) -> str | None:
        """The media id of a URL of this server's ``/media/{id}`` (None: another URL)."""
        parts = urlsplit(url)
        base = urlsplit(self.base_url)
        if parts.scheme and (parts.scheme, parts.netloc) != (base.scheme, base.netloc):
            return None
        prefix = base.path.rstrip("/") + MEDIA_PATH + "/"
        if not parts.path.startswith(prefix):
            return None
        media_id = parts.path[len(prefix) :]
        return media_id if valid_id(media_id) else None

    async def store(self, caller: Caller, data: bytes, media_type: str, filename: str) -> MediaFile:
        """Store one file (unbound); the checks of a file are the caller's."""
        file = MediaFile(
            id=new_media_id(),
            tenant=caller.tenant,
            task_id="",
            owner=owner_of(caller),
            media_type=media_type,
            filename=filename,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            created_ms=self.clock(),
        )
        await self.files.put(file, data)
        await self._sweep(file.created_ms)
        return file

    def check(self, where: str, data: bytes, media_type: str) -> None:
        """Refuse a file the settings do not take (its size, its type, an audio's length)."""
        limit = self.settings.max_file_bytes
        if len(data) > limit:
            raise too_large(where, limit)
        if not self.settings.accepts(media_type):
            raise A2AError(
                ErrorKind.CONTENT_TYPE_NOT_SUPPORTED,
                f"{where}: files of type {media_type} are not accepted"
                f" (accepted: {', '.join(self.settings.accepted)})",
            )
        seconds = wav_seconds(data) if media_type.startswith("audio/") else None
        if seconds is not None and seconds > self.settings.max_audio_seconds:
            raise invalid_params(
                where,
                f"the audio lasts {seconds:.0f} s, more than {self.settings.max_audio_seconds:g} s",
            )

    async def screen(self, request: SendMessageRequest, caller: Caller) -> Screened | None:
        parts = request.message.parts
        if not any(part.raw is not UNSET or part.url is not UNSET for part in parts):
            return None  # (every message pays this look: it must cost next to nothing)
        total = sum(len(part.raw) for part in parts if isinstance(part.raw, bytes))
        if total > self.settings.max_message_bytes:
            raise too_large("the message's files", self.settings.max_message_bytes)
        taken: list[str] = []
        for index, part in enumerate(parts):
            where = f"message.parts[{index}]"
            _forget_claims(part)
            if isinstance(part.raw, bytes):
                data, fetched = part.raw, ""
            elif isinstance(part.url, str):
                own = self.own_id(part.url)
                if own is not None:
                    continuing = request.message.task_id
                    found = await self._uploaded(caller, part, own, where, continuing)
                    if found:
                        taken.append(found)
                    continue
                if not self.settings.fetch_urls:
                    continue  # a link, left as it is
                data, fetched = await self._fetch(part.url, where)
                total += len(data)
                if total > self.settings.max_message_bytes:
                    raise too_large("the message's files", self.settings.max_message_bytes)
            else:
                continue
            name = safe_filename(part.filename) or _name_in(part.url)
            media_type = file_type(part.media_type, name, fetched)
            self.check(where, data, media_type)
            file = await self.store(caller, data, media_type, name)
            _rewrite(part, file, self.url_of(file))
            taken.append(file.id)
        if not taken:
            return None
        files, tenant = self.files, caller.tenant

        async def admitted(task_id: str) -> None:
            await files.bind(tenant, taken, task_id)

        return Screened(judge=_no_opinion, admitted=admitted)

    async def _uploaded(
        self, caller: Caller, part: Part, media_id: str, where: str, task_id: str
    ) -> str:
        """A part naming a file of this server: the caller's own upload no message took yet
        (its id: bound with the message), or a file of the very task the message continues
        (""; named again); anything else is refused, as one answer."""
        file = await self.files.get(caller.tenant, media_id)
        if file is not None and not file.task_id and file.owner == owner_of(caller):
            _rewrite(part, file, self.url_of(file))
            return file.id
        if file is not None and task_id and file.task_id == task_id:
            _rewrite(part, file, self.url_of(file))
            return ""
        raise invalid_params(where, "no such uploaded file (upload it again)")

    async def _fetch(self, url: str, where: str) -> tuple[bytes, str]:
        assert self.guard is not None
        try:
            return await fetch(
                url,
                self.guard,
                limit=self.settings.max_file_bytes,
                timeout_s=self.settings.fetch_timeout_s,
            )
        except FetchFailed as failed:
            raise invalid_params(where, f"cannot fetch the url: {failed}") from None
        except A2AError as error:
            raise A2AError(error.kind, f"{where}: {error.message}") from None

    async def _sweep(self, now_ms: int) -> None:
        if now_ms - self._swept_ms < _SWEEP_EVERY_MS:
            return
        self._swept_ms = now_ms
        await self.files.forget_unbound(now_ms - UNBOUND_TTL_MS)


def _no_opinion(task: Any) -> None:
    return None


def _name_in(url: Any) -> str:
    if not isinstance(url, str):
        return ""
    return safe_filename(urlsplit(url).path)


def _forget_claims(part: Part) -> None:
    """A client's own MEDIA_KEY in a part's metadata is not believed: only the gate writes it."""
    if isinstance(part.metadata, dict) and MEDIA_KEY in part.metadata:
        part.metadata = {k: v for k, v in part.metadata.items() if k != MEDIA_KEY} or UNSET


def _rewrite(part: Part, file: MediaFile, url: str) -> None:
    part.raw = UNSET
    part.url = url
    part.media_type = file.media_type
    part.filename = file.filename
    metadata = part.metadata if isinstance(part.metadata, dict) else {}
    part.metadata = {
        **metadata,
        MEDIA_KEY: {"id": file.id, "size": file.size, "sha256": file.sha256},
    }
