"""The store-extension seam: a feature's own tables in the task store's database.

A feature (accord's own, such as the harness's channel outbox, or a third-party plug-in)
declares a :class:`StoreExtension`: its name, its schema migrations per backend, the tables
whose rows go with their task when a task is deleted, and its in-memory state for the memory
store. ``store.extend(extension)``, before the store opens, registers it and hands back the
feature's way into the store (:data:`StoreAccess`): the SQLite writer thread and read
connection, the PostgreSQL pool, or the memory store's state of that extension, told apart by
``access.dialect``. ``open()`` applies the extensions' missing migrations after the store's
own, in the same transaction, and records each extension's version in the store's table
``store_extensions`` (docs/storage.md, "Tables of a feature").
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeAlias, TypeVar

from accord.store._base import StoreError

if TYPE_CHECKING:
    import sqlite3

    import asyncpg

# (version, statements) in version order, 1, 2, 3 … with no gaps; a released migration is
# never edited, a change is a new one at the end (as the store's own migrations).
Migrations = Sequence[tuple[int, Sequence[str]]]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _check_name(kind: str, name: str) -> None:
    if not _NAME.match(name):
        raise ValueError(f"{kind} {name!r}: letters, digits and underscores only")


@dataclass(frozen=True, slots=True)
class TaskRows:
    """A table of the extension whose rows belong to a task: ``column`` holds the task's id.
    When the store deletes a task (retention, a contract's retention), it deletes these rows
    in the same transaction."""

    table: str
    column: str = "task_id"

    def __post_init__(self) -> None:
        _check_name("table", self.table)
        _check_name("column", self.column)


def encode_task_rows(rows: Sequence[TaskRows]) -> str:
    """``rows`` as ``store_extensions`` keeps them: ``table.column,table.column``."""
    return ",".join(f"{row.table}.{row.column}" for row in rows)


def decode_task_rows(text: str) -> list[TaskRows]:
    """The rows :func:`encode_task_rows` wrote (checked again: they name tables in SQL)."""
    return [TaskRows(*item.split(".", 1)) for item in text.split(",") if item]


class ExtensionState(Protocol):
    """An extension's state in a memory store (its tables, as dicts): told which tasks the
    store deleted, it drops their rows."""

    def forget_tasks(self, task_ids: Collection[str]) -> None: ...


S = TypeVar("S", bound=ExtensionState)
S_co = TypeVar("S_co", bound=ExtensionState, covariant=True)
T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class StoreExtension(Generic[S]):
    """What a feature keeps in the task store's database.

    ``name`` keys its versions in ``store_extensions`` (one name, one feature, for good);
    ``sqlite`` and ``postgresql`` its migrations on each backend; ``task_rows`` its tables
    whose rows go with their task; ``memory`` makes its state in a memory store.
    """

    name: str
    memory: Callable[[], S]
    sqlite: Migrations = ()
    postgresql: Migrations = ()
    task_rows: Sequence[TaskRows] = ()

    def __post_init__(self) -> None:
        _check_name("store extension", self.name)
        for backend, migrations in (("sqlite", self.sqlite), ("postgresql", self.postgresql)):
            versions = [version for version, _ in migrations]
            if versions != list(range(1, len(versions) + 1)):
                raise ValueError(
                    f"store extension {self.name!r}: its {backend} migrations must be numbered"
                    f" 1, 2, 3 … in order, not {versions}"
                )


class Extensions:
    """The extensions registered with one store, in registration order."""

    def __init__(self) -> None:
        self._by_name: dict[str, StoreExtension[Any]] = {}

    def add(self, extension: StoreExtension[Any], *, store_open: bool) -> bool:
        """Register ``extension``; False when it is registered already. An extension is
        registered before the store opens (its migrations run then)."""
        held = self._by_name.get(extension.name)
        if held is extension:
            return False
        if held is not None:
            raise StoreError(f"another store extension is named {extension.name!r} already")
        if store_open:
            raise StoreError(
                f"store extension {extension.name!r}: extend the store before it opens"
            )
        self._by_name[extension.name] = extension
        return True

    def __iter__(self) -> Iterator[StoreExtension[Any]]:
        return iter(list(self._by_name.values()))


def missing_migrations(migrations: Migrations, found: int, what: str) -> Migrations:
    """Those of ``migrations`` after version ``found`` (what the database holds of ``what``:
    "schema", "store extension 'x'"); StoreError when the database is newer than the code."""
    latest = migrations[-1][0] if migrations else 0
    if found > latest:
        raise StoreError(
            f"the database has {what} version {found}; this accord knows up to {latest}"
        )
    return [(version, statements) for version, statements in migrations if version > found]


# --- the ways into a store, one per backend ---------------------------------------------------


class Purges(Protocol):
    """What every way into a store offers."""

    async def delete_terminal_tasks(self, tenant: str, task_ids: Sequence[str]) -> list[str]:
        """Delete those of the tenant's tasks that are terminal, with their logs, push
        configs, feed entries and every extension's rows (a feature's own retention);
        returns the ids deleted."""
        ...


class SqliteAccess(Purges, Protocol):
    """An extension's way into a SQLite store: writes run on its writer thread (they take
    turns with task writes and commit in its groups), reads on its read connection."""

    @property
    def dialect(self) -> Literal["sqlite"]: ...

    def write(self, op: Callable[[sqlite3.Connection], T]) -> Awaitable[T]:
        """Run ``op`` in the writer's transaction, on the writer thread (keep it short: every
        write of the store waits behind it); resolves once it is committed (with what ``op``
        returned), or with what it raised (and then nothing of it was written)."""
        ...

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows of a query on the read connection (every one: no cursor stays open)."""
        ...


class PostgresAccess(Purges, Protocol):
    """An extension's way into a PostgreSQL store: the pool its statements run on."""

    @property
    def dialect(self) -> Literal["postgresql"]: ...

    @property
    def pool(self) -> asyncpg.Pool: ...


class MemoryAccess(Purges, Protocol[S_co]):
    """An extension's way into a memory store: its state there (one per store)."""

    @property
    def dialect(self) -> Literal["memory"]: ...

    @property
    def state(self) -> S_co: ...


# What ``store.extend`` hands back; ``access.dialect`` tells which it is.
StoreAccess: TypeAlias = SqliteAccess | PostgresAccess | MemoryAccess[S]
