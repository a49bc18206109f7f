"""Media: files in messages (tiny-harness's media extension v1, docs/media.md).

A file part of a message (``raw`` bytes, or a ``url`` fetched through the SSRF guard) is
stored in the task store's database — the ``media`` store extension, whose rows go with
their task — and rewritten in the stored message to a URL of this server, ``/media/{id}``,
which serves the bytes to whoever may read the task (the service's one read path).

- :class:`MediaSettings`, :func:`parse_media`: the ``[media]`` table;
- :class:`MediaIngest`: the gate that stores a message's files and rewrites their parts;
- :class:`MediaEndpoint`: ``GET``/``HEAD /media/{id}`` (ranges) and ``POST /media``;
- :data:`MEDIA_TABLES`, :func:`media_store`: the tables (memory, SQLite, PostgreSQL);
- :func:`attach`, :func:`endpoint`, :func:`card_extension`: how the application wires it;
- :func:`file_part`: a client's file as a message part.
"""

from accord.media._client import FileError, file_part
from accord.media._endpoint import MediaEndpoint
from accord.media._ingest import MEDIA_KEY, MEDIA_PATH, MediaIngest
from accord.media._settings import MediaSettings, parse_media
from accord.media._setup import MEDIA_URI, TaskFiles, attach, card_extension, endpoint
from accord.media._tables import MEDIA_TABLES, MediaFile, MediaStore, MemoryMedia, media_store

__all__ = [
    "MEDIA_KEY",
    "MEDIA_PATH",
    "MEDIA_TABLES",
    "MEDIA_URI",
    "FileError",
    "MediaEndpoint",
    "MediaFile",
    "MediaIngest",
    "MediaSettings",
    "MediaStore",
    "MemoryMedia",
    "TaskFiles",
    "attach",
    "card_extension",
    "endpoint",
    "file_part",
    "media_store",
    "parse_media",
]
