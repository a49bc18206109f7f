"""Closing a SQLite connection without a checkpoint (``SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE``).

By default the last connection to close a WAL database checkpoints it: it copies the WAL's
frames into the database file and then fsyncs that file. The fsync writes back every dirty
page of the file the OS holds, not only the frames just copied: on a freshly copied or
restored 2.3 GB file (1,000,000 tasks) that was 60-90 s of ``accord serve`` not exiting after
SIGTERM, its main thread in ``fdatasync`` under ``sqlite3_close``.

Nothing needs that checkpoint: every commit is already in the WAL (on disk with
``synchronous=FULL``, in the OS with NORMAL), and the next open of the file reads the WAL back
(SQLite's WAL recovery). So the store's connections are told not to checkpoint on close: the
``-wal`` and ``-shm`` files stay beside the database after a stop, as after a crash.

Python 3.12 sets the option with ``Connection.setconfig``; on 3.11 it is set through the same
SQLite library ``_sqlite3`` is linked to, on the handle CPython 3.11 keeps first in its
connection object, and read back: if that fails, the connection closes as before.
``sqlite3_db_config`` is variadic, so the call names its two fixed arguments' types and ctypes
passes the rest as variadic ones: on Apple ARM64 those travel on the stack, not in registers,
and a call made as if all four were fixed would hand SQLite garbage.
"""

from __future__ import annotations

import ctypes
import sqlite3
import sys

_NO_CKPT_ON_CLOSE = 1006  # SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE (SQLite 3.25.0 and later)


def skip_checkpoint_on_close(conn: sqlite3.Connection) -> bool:
    """Make ``conn`` close without checkpointing; True if the option is set."""
    setconfig = getattr(conn, "setconfig", None)
    if setconfig is not None:  # Python 3.12+
        setconfig(_NO_CKPT_ON_CLOSE, True)
        return bool(conn.getconfig(_NO_CKPT_ON_CLOSE))  # type: ignore[attr-defined]
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
        return False
    return _set_through_handle(conn)


def _set_through_handle(conn: sqlite3.Connection) -> bool:
    import _sqlite3

    try:
        library = ctypes.CDLL(_sqlite3.__file__)
        db_config = library.sqlite3_db_config
    except (OSError, AttributeError):
        return False
    db_config.restype = ctypes.c_int
    # The fixed arguments only: the two after them are passed as variadic ones.
    db_config.argtypes = [ctypes.c_void_p, ctypes.c_int]
    # CPython 3.11's pysqlite_Connection: PyObject_HEAD, then the sqlite3 * handle.
    handle = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__)
    if not handle.value:
        return False
    value = ctypes.c_int(-1)
    if db_config(handle, _NO_CKPT_ON_CLOSE, 1, ctypes.byref(value)) != 0:
        return False
    return value.value == 1
