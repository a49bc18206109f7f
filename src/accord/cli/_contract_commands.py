"""``accord contracts …`` (an agent's interaction contracts, through its operators' API) and
``accord keys generate`` (an agent key).

Every contracts command but ``verify`` takes the agent's URL first (``:9999`` is short for
``http://localhost:9999``) and the operator's credential: ``--token`` (or ``$ACCORD_TOKEN``)
or ``--header NAME:VALUE`` (``X-API-Key:…``). ``--json`` prints the API's answer as it is.
``verify`` checks a contract document offline.

Exit codes: 0 success; 1 the agent refused (the reason code is shown), or ``verify`` found a
failure; 2 bad usage; 3 the agent could not be reached or did not answer JSON.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click
import httpx
from rich.table import Table
from rich.text import Text

from accord.cli._output import console, id_column, print_table

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3


def _fail(code: int, message: str) -> NoReturn:
    click.echo(f"accord: {message}", err=True)
    sys.exit(code)


class Api:
    """The operators' API of one agent, for one command."""

    def __init__(
        self, url: str, token: str | None, headers: tuple[str, ...], timeout: float, as_json: bool
    ) -> None:
        from accord.client import expand_shorthand

        self.base = expand_shorthand(url).rstrip("/")
        self.headers: dict[str, str] = {}
        for value in headers:
            name, sep, content = value.partition(":")
            if not sep or not name.strip():
                raise click.BadParameter(
                    f"expected NAME:VALUE, got {value!r}", param_hint="--header"
                )
            self.headers[name.strip()] = content.strip()
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.timeout = timeout
        self.as_json = as_json

    def call(self, method: str, path: str, body: dict[str, Any] | None = None, **query: str) -> Any:
        url = f"{self.base}/contracts{path}"
        try:
            response = httpx.request(
                method,
                url,
                json=body if method == "POST" else None,
                params={k: v for k, v in query.items() if v},
                headers=self.headers,
                timeout=self.timeout,
            )
        except httpx.HTTPError as exc:
            _fail(EXIT_UNREACHABLE, f"cannot reach {url}: {exc}")
        try:
            answer = response.json()
        except ValueError:
            _fail(EXIT_UNREACHABLE, f"{url} answered {response.status_code} without JSON")
        if response.is_success:
            return answer
        if self.as_json:
            click.echo(json.dumps(answer, ensure_ascii=False))
            sys.exit(EXIT_REFUSED)
        error = answer.get("error", {}) if isinstance(answer, dict) else {}
        _fail(EXIT_REFUSED, str(error.get("message") or f"HTTP {response.status_code}"))


def _api_options(command: Any) -> Any:
    for option in reversed(
        [
            click.argument("url"),
            click.option("--token", envvar="ACCORD_TOKEN", help="Bearer token (or $ACCORD_TOKEN)."),
            click.option(
                "--header", "headers", multiple=True, metavar="NAME:VALUE",
                help="Extra header (X-API-Key:… for an API key).",
            ),
            click.option("--timeout", type=float, default=60.0, show_default=True,
                         help="Seconds to wait for the agent."),
            click.option("--json", "as_json", is_flag=True, help="Print the API's JSON."),
        ]
    ):  # fmt: skip
        command = option(command)
    return command


def _api(
    url: str, token: str | None, headers: tuple[str, ...], timeout: float, as_json: bool
) -> Api:
    return Api(url, token, headers, timeout, as_json)


@click.group()
def contracts() -> None:
    """Interaction contracts between agents: terms-template, propose, list, show, accept,
    reject, cancel, complete, approve, verify."""


def _show(api: Api, record: dict[str, Any]) -> None:
    if api.as_json:
        click.echo(json.dumps(record, ensure_ascii=False))
        return
    document = record["interaction"]
    local = record.get("localAgent", "")
    role = "initiator" if local == document["initiatorAgentId"] else "responder"
    other = document["responderAgentId"] if role == "initiator" else document["initiatorAgentId"]
    out = console()
    out.print(
        f"contract {document['interactionId']} {document['status']} "
        f"({role}, with {other}; expires {document['expiresAt']})",
        markup=False,
    )
    ending = record.get("ending")
    if ending:
        why = f": {ending['reason']}" if ending.get("reason") else ""
        out.print(
            f"ended {ending['status']} by {ending['by']} at {ending['at']}{why}", markup=False
        )


@contracts.command("propose")
@_api_options
@click.option("--responder", required=True, metavar="AGENT_ID", help="The other agent's id.")
@click.option(
    "--terms", "terms_file", required=True, type=click.Path(exists=True, dir_okay=False),
    help="A JSON file with the contract's terms (interactionId and parties may be left out).",
)  # fmt: skip
@click.option("--expires-at", help="When it expires (RFC 3339, UTC, ending in Z).")
def propose(
    url: str,
    token: str | None,
    headers: tuple[str, ...],
    timeout: float,
    as_json: bool,
    responder: str,
    terms_file: str,
    expires_at: str | None,
) -> None:
    """Propose a contract to another agent (the terms signed by this agent)."""
    api = _api(url, token, headers, timeout, as_json)
    try:
        terms = json.loads(Path(terms_file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        _fail(EXIT_USAGE, f"{terms_file}: not a JSON file ({exc})")
    body: dict[str, Any] = {"responder": responder, "terms": terms}
    if expires_at:
        body["expiresAt"] = expires_at
    _show(api, api.call("POST", "", body))


@contracts.command("terms-template")
def terms_template() -> None:
    """Print a complete terms file to edit (JSON: every field of the terms; a proposal fills
    in interactionId and parties): accord contracts terms-template > terms.json"""
    from accord.contracts import terms_template as template

    click.echo(json.dumps(template(), indent=2, ensure_ascii=False))


@contracts.command("list")
@_api_options
@click.option(
    "--status",
    type=click.Choice(["pending", "active", "rejected", "expired", "cancelled", "completed"]),
)
@click.option("--page-token", default="", help="The page to show (from the previous page).")
def list_(
    url: str,
    token: str | None,
    headers: tuple[str, ...],
    timeout: float,
    as_json: bool,
    status: str | None,
    page_token: str,
) -> None:
    """List the agent's contracts, newest first."""
    api = _api(url, token, headers, timeout, as_json)
    page = api.call("GET", "", status=status or "", pageToken=page_token)
    if as_json:
        click.echo(json.dumps(page, ensure_ascii=False))
        return
    table = Table(id_column("interaction"), "status", "role", id_column("with"), "expires")
    for record in page.get("contracts", []):
        document = record["interaction"]
        initiator = record.get("localAgent") == document["initiatorAgentId"]
        table.add_row(
            Text(document["interactionId"]),
            Text(document["status"]),
            Text("initiator" if initiator else "responder"),
            Text(document["responderAgentId" if initiator else "initiatorAgentId"]),
            Text(document["expiresAt"]),
        )
    print_table(console(), table)
    if page.get("nextPageToken"):
        click.echo(f"more: --page-token {page['nextPageToken']}")


@contracts.command("show")
@_api_options
@click.argument("interaction_id")
def show(
    url: str, token: str | None, headers: tuple[str, ...], timeout: float, as_json: bool,
    interaction_id: str,
) -> None:  # fmt: skip
    """Show one contract: its document and its log of moves."""
    api = _api(url, token, headers, timeout, as_json)
    record = api.call("GET", f"/{interaction_id}")
    if as_json:
        click.echo(json.dumps(record, ensure_ascii=False))
        return
    _show(api, record)
    click.echo(json.dumps(record["interaction"]["contract"], indent=2, ensure_ascii=False))
    for event in record.get("events", []):
        detail = f" {json.dumps(event['detail'], ensure_ascii=False)}" if "detail" in event else ""
        click.echo(f"{event['at']} v{event['version']} {event['kind']} by {event['actor']}{detail}")


def _move_command(verb: str, summary: str, *, reason: bool = False) -> click.Command:
    def run(
        url: str,
        token: str | None,
        headers: tuple[str, ...],
        timeout: float,
        as_json: bool,
        interaction_id: str,
        **extra: Any,
    ) -> None:
        api = _api(url, token, headers, timeout, as_json)
        names = {"reason": "reason", "task_id": "taskId"}
        body = {names[k]: v for k, v in extra.items() if v}
        _show(api, api.call("POST", f"/{interaction_id}:{verb}", body))

    run.__doc__ = summary
    command = click.argument("interaction_id")(run)
    if reason:
        command = click.option("--reason", default="", help="Why (recorded and told).")(command)
    if verb == "approve":
        command = click.option(
            "--task", "task_id", required=True, metavar="TASK_ID",
            help="The task parked for approval.",
        )(command)  # fmt: skip
    return contracts.command(verb)(_api_options(command))


accept = _move_command("accept", "Accept a pending contract (its responder; signed here).")
reject = _move_command("reject", "Reject a pending contract (its responder).", reason=True)
cancel = _move_command(
    "cancel", "Withdraw a pending proposal (its initiator) or cancel an active contract.",
    reason=True,
)  # fmt: skip
complete = _move_command("complete", "Complete an active contract on this agent's side.")
approve = _move_command("approve", "Approve the action a task under the contract waits for.")


@contracts.command("verify")
@click.argument("document", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--keys", "key_files", multiple=True, metavar="AGENT_ID=FILE",
    help="An agent's keys: a JWKS file, or its agent card saved as JSON. Repeatable.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def verify(document: str, key_files: tuple[str, ...], as_json: bool) -> None:
    """Check a contract document offline: its schema, its terms hash, every acceptance and
    signature (against the keys given)."""
    from accord.contracts import verify_document
    from accord.signing import InvalidKeyError, KeySet, published_keys

    keys: dict[str, KeySet] = {}
    for item in key_files:
        agent_id, sep, path = item.partition("=")
        if not sep or not agent_id or not path:
            raise click.BadParameter(f"expected AGENT_ID=FILE, got {item!r}", param_hint="--keys")
        loaded = _read_json(path)
        try:
            if isinstance(loaded, dict) and "keys" in loaded:
                keys[agent_id] = KeySet.from_jwks(loaded)
            else:
                published = published_keys(loaded) if isinstance(loaded, dict) else None
                if published is None:
                    raise InvalidKeyError("neither a JWKS nor a card that publishes keys")
                keys[agent_id] = published[1]
        except InvalidKeyError as exc:
            _fail(EXIT_USAGE, f"{path}: {exc}")
    checks = verify_document(_read_json(document), keys)
    failed = [c for c in checks if not c.ok]
    if as_json:
        shown = [{"check": c.what, "ok": c.ok, "detail": c.detail} for c in checks]
        click.echo(json.dumps({"ok": not failed, "checks": shown}, ensure_ascii=False))
    else:
        for check in checks:
            mark = "note" if check.note else ("ok" if check.ok else "FAIL")
            detail = f": {check.detail}" if check.detail else ""
            click.echo(f"{mark:4} {check.what}{detail}")
    sys.exit(EXIT_REFUSED if failed else EXIT_OK)


def _read_json(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        _fail(EXIT_USAGE, f"{path}: not a JSON file ({exc})")


@click.group()
def keys() -> None:
    """Agent keys (Ed25519) for card signing and signed contract acceptances."""


@keys.command("generate")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
def generate(file: str, force: bool) -> None:
    """Write a new Ed25519 private key to FILE (PEM, readable by its owner only) and print
    its public JWK (its kid is what [identity] publishes)."""
    from accord.signing import AgentKey, generate_private_pem, load_private_pem

    pem = generate_private_pem()
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        descriptor = os.open(file, flags, 0o600)
    except FileExistsError:
        _fail(EXIT_USAGE, f"{file} exists (--force replaces it)")
    except OSError as exc:
        _fail(EXIT_USAGE, f"cannot write {file}: {exc.strerror or exc}")
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(pem)
    os.chmod(file, 0o600)  # (a replaced file keeps its old mode otherwise)
    jwk = AgentKey.from_private(load_private_pem(pem)).jwk()
    click.echo(json.dumps(jwk))
