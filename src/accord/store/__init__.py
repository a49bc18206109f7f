"""Task storage: the TaskStore interface and its backends, chosen by URL.

- ``memory://``: :class:`MemoryStore`, nothing survives the process;
- ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``: :class:`SqliteStore`,
  optionally with ``?synchronous=normal`` (see docs/storage.md). The default is
  ``sqlite:///accord.db``, a file in the working directory.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from accord.store.base import SeqConflict, StoreError, TaskPage, TaskStore
from accord.store.memory import MemoryStore
from accord.store.sqlite import SqliteStore

__all__ = [
    "DEFAULT_URL",
    "MemoryStore",
    "SeqConflict",
    "SqliteStore",
    "StoreError",
    "TaskPage",
    "TaskStore",
    "open_store",
]

DEFAULT_URL = "sqlite:///accord.db"


def open_store(url: str = DEFAULT_URL) -> TaskStore:
    """The store ``url`` names, not yet opened: ``await store.open()`` before use.

    Raises ValueError for a URL no backend understands.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"store URL {url!r} has no scheme (memory:// or sqlite:///path)")
    location, _, query = rest.partition("?")
    options = {key: values[-1] for key, values in parse_qs(query, strict_parsing=False).items()}
    if scheme == "memory":
        if location or options:
            raise ValueError(f"store URL {url!r}: memory:// takes no path or options")
        return MemoryStore()
    if scheme == "sqlite":
        # sqlite:///x.db -> "/x.db" after the scheme: the host part is empty, the rest is
        # the path, relative unless it starts with another slash (sqlite:////abs/x.db).
        if not location.startswith("/"):
            raise ValueError(f"store URL {url!r}: expected sqlite:///path or sqlite:////abs/path")
        path = location[1:]
        if not path:
            raise ValueError(f"store URL {url!r} names no file")
        unknown = set(options) - {"synchronous"}
        if unknown:
            raise ValueError(f"store URL {url!r}: unknown option(s) {sorted(unknown)}")
        return SqliteStore(path, synchronous=options.get("synchronous", "FULL"))
    raise ValueError(f"store URL {url!r}: unknown scheme {scheme!r} (memory, sqlite)")
