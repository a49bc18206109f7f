"""Task storage: the TaskStore interface and its backends, chosen by URL.

- ``memory://``: :class:`MemoryStore`, nothing survives the process;
- ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``: :class:`SqliteStore`,
  optionally with ``?synchronous=normal`` and ``?row_cache_kib=N`` (the cache of task rows
  that GetTask reads; 0 turns it off; see docs/storage.md). The default is
  ``sqlite:///accord.db``, a file in the working directory;
- ``postgresql://user@host:port/db`` (or ``postgres://``): :class:`PostgresStore`, for several
  nodes on one database (docs/scale-out.md); ``?pool_size=N`` bounds its connections, other
  options are passed to asyncpg.

A feature keeps its own tables in the store's database through :class:`StoreExtension`
(``store.extend(extension)`` before ``open()``; :mod:`accord.store._extensions`).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs

from accord.errors import require
from accord.store import _sqlite_lock as sqlite_lock
from accord.store._base import (
    DeliveryState,
    DuplicateRequest,
    FeedEntry,
    LimitExceeded,
    NodeLosses,
    PushDelivery,
    RequestLog,
    SeqConflict,
    SharedStore,
    StoredRequest,
    StoreError,
    TaskGone,
    TaskHolds,
    TaskPage,
    TaskSnapshots,
    TaskStore,
    unavailable,
)
from accord.store._claims import Claim, ClaimTable, LocalClaimTable
from accord.store._extensions import (
    ExtensionState,
    MemoryAccess,
    Migrations,
    PostgresAccess,
    SqliteAccess,
    StoreAccess,
    StoreExtension,
    TaskRows,
)
from accord.store._memory import MemoryStore
from accord.store._sqlite import DEFAULT_ROW_CACHE_KIB, SqliteStore
from accord.store._sqlite_lock import FileInUse

__all__ = [
    "DEFAULT_URL",
    "POSTGRES_SCHEMES",
    "Claim",
    "ClaimTable",
    "DeliveryState",
    "DuplicateRequest",
    "ExtensionState",
    "FeedEntry",
    "FileInUse",
    "LimitExceeded",
    "LocalClaimTable",
    "MemoryAccess",
    "MemoryStore",
    "Migrations",
    "NodeLosses",
    "PostgresAccess",
    "PushDelivery",
    "RequestLog",
    "SeqConflict",
    "SharedStore",
    "SqliteAccess",
    "SqliteStore",
    "StoreAccess",
    "StoreError",
    "StoreExtension",
    "StoredRequest",
    "TaskGone",
    "TaskHolds",
    "TaskPage",
    "TaskRows",
    "TaskSnapshots",
    "TaskStore",
    "hold_store_file",
    "open_store",
    "redact_url",
    "unavailable",
]

DEFAULT_URL = "sqlite:///accord.db"
POSTGRES_SCHEMES = ("postgresql", "postgres")  # a store URL's schemes for PostgreSQL


# user:password@ in the authority, and password-like query options (libpq's and asyncpg's).
_USERINFO_PASSWORD = re.compile(r"^([a-z][a-z0-9+.-]*://[^/?#@:]*):[^/?#@]*@", re.IGNORECASE)
_SECRET_OPTION = re.compile(r"([?&](?:password|sslpassword|passfile)=)[^&#]*", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` fit for a log line or an error message: a password in it is replaced by
    ``***`` (``postgresql://accord:***@db/accord``)."""
    url = _USERINFO_PASSWORD.sub(r"\1:***@", url)
    return _SECRET_OPTION.sub(r"\1***", url)


def open_store(url: str = DEFAULT_URL, *, exclusive: bool = True) -> TaskStore:
    """The store ``url`` names, not yet opened: ``await store.open()`` before use.

    ``exclusive=False`` opens a SQLite file without holding it against other processes (for
    a reader beside a running server; see :mod:`accord.store._sqlite_lock`).
    Raises ValueError for a URL no backend understands (its message shows the URL with any
    password hidden).
    """
    shown = redact_url(url)
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"store URL {shown!r} has no scheme (memory:// or sqlite:///path)")
    location, _, query = rest.partition("?")
    options = {key: values[-1] for key, values in parse_qs(query, strict_parsing=False).items()}
    if scheme == "memory":
        if location:
            raise ValueError(f"store URL {shown!r}: memory:// takes no path")
        unknown = set(options) - {"max_ended_tasks"}
        if unknown:
            raise ValueError(f"store URL {shown!r}: unknown option(s) {sorted(unknown)}")
        max_ended = options.get("max_ended_tasks")
        if max_ended is not None and (not max_ended.isdigit() or int(max_ended) < 1):
            raise ValueError(f"store URL {shown!r}: max_ended_tasks must be a positive integer")
        return MemoryStore(max_ended_tasks=int(max_ended) if max_ended is not None else None)
    if scheme == "sqlite":
        # sqlite:///x.db -> "/x.db" after the scheme: the host part is empty, the rest is
        # the path, relative unless it starts with another slash (sqlite:////abs/x.db).
        if not location.startswith("/"):
            raise ValueError(f"store URL {shown!r}: expected sqlite:///path or sqlite:////abs/path")
        path = location[1:]
        if not path:
            raise ValueError(f"store URL {shown!r} names no file")
        unknown = set(options) - {"synchronous", "row_cache_kib"}
        if unknown:
            raise ValueError(f"store URL {shown!r}: unknown option(s) {sorted(unknown)}")
        row_cache_kib = options.get("row_cache_kib", str(DEFAULT_ROW_CACHE_KIB))
        if not row_cache_kib.isdigit():
            raise ValueError(f"store URL {shown!r}: row_cache_kib must be a whole number of KiB")
        return SqliteStore(
            path,
            synchronous=options.get("synchronous", "FULL"),
            row_cache_kib=int(row_cache_kib),
            exclusive=exclusive,
        )
    if scheme in POSTGRES_SCHEMES:
        require("postgres", "a PostgreSQL store")
        from accord.store._postgres import PostgresStore  # asyncpg loads only when used

        pool_size = options.pop("pool_size", None)
        dsn = url
        if pool_size is not None:
            kept = [p for p in query.split("&") if p and not p.startswith("pool_size=")]
            dsn = f"{scheme}://{location}" + (f"?{'&'.join(kept)}" if kept else "")
            if not pool_size.isdigit() or int(pool_size) < 1:
                raise ValueError(f"store URL {shown!r}: pool_size must be a positive integer")
        return PostgresStore(dsn, pool_size=int(pool_size) if pool_size else 10)
    raise ValueError(f"store URL {shown!r}: unknown scheme {scheme!r} (memory, sqlite, postgresql)")


def hold_store_file(url: str) -> None:
    """Hold the SQLite file ``url`` names for the rest of this process (nothing for other
    stores): ``accord serve`` does this before it starts, so a second server on the file stops
    there, with FileInUse, instead of recovering (failing) the first one's running tasks.
    Raises ValueError as :func:`open_store` does."""
    store = open_store(url)
    if isinstance(store, SqliteStore):
        sqlite_lock.hold(store.path)  # released by the OS when the process ends
