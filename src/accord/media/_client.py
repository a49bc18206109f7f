"""A client's file as a message part (``accord send --file``, ``/attach`` in ``accord chat``)."""

from __future__ import annotations

import mimetypes
from pathlib import Path

from accord.errors import AccordError
from accord.wire import Part

# What a client reads of a file at most (the server refuses past its own limits anyway).
MAX_CLIENT_FILE_BYTES = 64 * 1024 * 1024


class FileError(AccordError):
    """A file given to send that cannot be read (one line naming it)."""


def file_part(path: str | Path) -> Part:
    """The file at ``path`` as a ``raw`` part, with its name and a media type guessed from
    it (``application/octet-stream`` when none is)."""
    file = Path(path).expanduser()
    try:
        size = file.stat().st_size
        if not file.is_file():
            raise FileError(f"{path}: not a file")
        if size > MAX_CLIENT_FILE_BYTES:
            raise FileError(f"{path}: {size} bytes, more than {MAX_CLIENT_FILE_BYTES}")
        data = file.read_bytes()
    except OSError as exc:
        raise FileError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    media_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    return Part(raw=data, filename=file.name, media_type=media_type)
