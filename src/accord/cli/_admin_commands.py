"""``accord admin``: operator commands. ``purge URL TASK_ID`` asks a running server, through
its operators' API (``POST /admin/tasks/{id}:purge``, the ``accord.admin.Operator`` actor), to
delete an ended task now; the others read the server's store directly, not over the network
(the protocol has no place for them).

They only read, so they run beside a running ``accord serve``: they open a SQLite file
without holding it (accord.store._sqlite_lock). A command that wrote would hold it like a
server, and be refused with the server's "in use" message while one runs.

The store is named as for ``accord serve``: ``--store``, else ``--config`` / ``ACCORD_CONFIG``
(its ``store`` setting), else ``ACCORD_STORE``, else ``sqlite:///accord.db``.

Exit codes: 0 success (also when nothing is listed); 2 bad usage (an unknown store URL, a
SQLite file that does not exist, ``memory://``, which holds nothing outside a server
process); 3 the store could not be opened or read.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, get_args

import click
from rich.table import Table
from rich.text import Text

from accord.cli._contract_commands import Api, api_options
from accord.cli._output import console, id_column, print_table
from accord.push import loggable_origin, scrub
from accord.store import DeliveryState, PushDelivery, SqliteStore, StoreError, TaskStore, open_store

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_STORE = 3


@click.group()
def admin() -> None:
    """Operator commands: purge a task on a server; read the server's store directly."""


def _fail(code: int, message: str) -> NoReturn:
    click.echo(f"accord: {message}", err=True)
    sys.exit(code)


def _store_url(config_path: str | None, store: str | None) -> str:
    from accord.app import load

    try:
        return load(config_path, {"store": store}).store
    except (ValueError, OSError) as exc:
        _fail(EXIT_USAGE, str(exc))


def _open_for_reading(url: str) -> TaskStore:
    """The store ``url`` names, refusing what would read nothing (and create a file)."""
    if url.startswith("memory:"):
        _fail(EXIT_USAGE, "memory:// holds nothing outside the server process")
    try:
        # Not exclusive: reading beside a running accord serve is safe (SQLite's WAL).
        store = open_store(url, exclusive=False)
    except ValueError as exc:
        _fail(EXIT_USAGE, str(exc))
    # Opening a SQLite path that does not exist would create an empty database.
    if isinstance(store, SqliteStore) and not Path(store.path).is_file():
        _fail(EXIT_USAGE, f"no SQLite database at {store.path}")
    return store


def _iso(ms: int) -> str:
    if ms <= 0:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def delivery_row(delivery: PushDelivery) -> dict[str, Any]:
    """What an operator sees of one delivery: never the token, the authentication
    credentials, or the webhook's path and query."""
    config = delivery.config.config
    return {
        "taskId": config.task_id,
        "configId": config.id,
        "tenant": delivery.config.tenant,
        "webhook": loggable_origin(config.url),
        "state": delivery.state,
        "failures": delivery.failures,
        # scrub: an error stored by an accord that quoted header values in it
        "lastError": scrub(delivery.last_error, config),
        "nextAttemptMs": delivery.next_attempt_ms,
        "nextAttempt": _iso(delivery.next_attempt_ms),
        "deliveredSeq": delivery.cursor,
        "taskSeq": delivery.task_seq,
    }


async def _list(
    store: TaskStore, state: DeliveryState, limit: int
) -> tuple[list[PushDelivery], bool]:
    """Up to ``limit`` deliveries in ``state`` and whether there are more."""
    await store.open()
    try:
        found = await store.list_push_deliveries(state, limit=limit + 1)
    finally:
        await store.close()
    return found[:limit], len(found) > limit


def _print_table(rows: list[dict[str, Any]], state: str) -> None:
    out = console()
    if not rows:
        out.print(f"no {state} push deliveries")
        return
    table = Table(
        id_column("task"),
        id_column("config"),
        "tenant",
        id_column("webhook"),
        "failures",
        "last error",
        "next attempt",
    )
    for row in rows:
        # Text, not markup: brackets in an id or an error are shown as written.
        table.add_row(
            *(
                Text(str(row[key]))
                for key in (
                    "taskId",
                    "configId",
                    "tenant",
                    "webhook",
                    "failures",
                    "lastError",
                    "nextAttempt",
                )
            )
        )
    print_table(out, table)


@admin.command("push-deliveries")
@click.option(
    "--state",
    type=click.Choice(list(get_args(DeliveryState))),
    default="failing",
    show_default=True,
    help="failing: gave up after too many failures; active: being delivered; done: "
    "terminal task, everything delivered.",
)
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (a JSON array).")
@click.option(
    "--store",
    help="sqlite:///path or postgresql://user@host/db (default: as for accord serve).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False),
    help="The server's TOML settings file (its store setting).",
)
def push_deliveries(
    state: DeliveryState, limit: int, as_json: bool, store: str | None, config_path: str | None
) -> None:
    """List webhooks by delivery state, failing ones by default, ordered by task and config:
    task, config, tenant, webhook (scheme://host:port only), failures, last error and next
    attempt. Tokens and credentials are never printed."""
    opened = _open_for_reading(_store_url(config_path, store))
    try:
        found, more = asyncio.run(_list(opened, state, limit))
    except (StoreError, OSError) as exc:
        _fail(EXIT_STORE, f"cannot read the store: {exc}")
    rows = [delivery_row(delivery) for delivery in found]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False))
    else:
        _print_table(rows, state)
    if more:
        click.echo(f"accord: more {state} deliveries than --limit {limit}", err=True)
    sys.exit(EXIT_OK)


@admin.command("purge")
@api_options
@click.argument("task_id")
def purge(
    url: str,
    task_id: str,
    token: str | None,
    headers: tuple[str, ...],
    timeout: float,
    as_json: bool,
) -> None:
    """Delete the ended task TASK_ID now, with its log, media, push configs and every table's
    rows of it (a task of another tenant, or none, is not found; a live one is refused:
    cancel it first). Exit codes: 0 purged; 1 refused; 2 bad usage; 3 unreachable."""
    from urllib.parse import quote

    api = Api(url, token, headers, timeout, as_json, root="/admin")
    answer = api.call("POST", f"/tasks/{quote(task_id, safe='')}:purge")
    if as_json:
        click.echo(json.dumps(answer, ensure_ascii=False))
    else:
        click.echo(f"purged {answer.get('purged', task_id)}")
