"""``accord send|stream … --contract REF [--action ACTION] [--data-class CLASS]…``: a message
under an interaction contract, its metadata filled in from the contract (docs/contracts.md).

``REF`` is a file holding the contract — the document, or its record as ``accord contracts show
URL ID --json`` prints it — or the contract's interaction id, read from an operators' API:
``--contract-api URL`` (default: the agent the message goes to) with
``--contract-api-header NAME:VALUE`` (default: this command's own credentials).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from accord.wire import Message

if TYPE_CHECKING:
    from accord.cli._client_commands import Settings

F = TypeVar("F", bound=Callable[..., Any])
EXIT_USAGE = 2


def _usage(message: str) -> NoReturn:
    click.echo(f"accord: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _document_of(found: Any, where: str) -> dict[str, Any]:
    """The contract document in ``found`` (a document, or a record holding one)."""
    document = found.get("interaction", found) if isinstance(found, dict) else None
    needed = ("interactionId", "termsHash", "initiatorAgentId", "responderAgentId")
    if not isinstance(document, dict) or not all(
        isinstance(document.get(name), str) for name in needed
    ):
        _usage(f"{where}: not a contract document (no {', '.join(needed)})")
    return document


def _from_api(
    reference: str, settings: Settings, api_url: str | None, headers: tuple[str, ...]
) -> dict[str, Any]:
    """The contract with interaction id ``reference``, from the operators' API at ``api_url``
    (default: the agent's own URL, with this command's credentials unless headers are given)."""
    from accord.cli._contract_commands import Api

    token = None
    if api_url is None:
        api_url = settings.url
        if not headers:
            headers = tuple(f"{name}:{value}" for name, value in settings.headers.items())
            token = settings.token
    api = Api(api_url, token, headers, settings.timeout or 60.0, as_json=False)
    return _document_of(api.call("GET", f"/{reference}"), f"contract {reference}")


def contract_document(
    reference: str, settings: Settings, api_url: str | None, headers: tuple[str, ...]
) -> dict[str, Any]:
    """The contract ``reference`` names: a file's, or the operators' API's."""
    path = Path(reference)
    if path.is_file():
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            _usage(f"{reference}: not a JSON file ({exc})")
        return _document_of(found, reference)
    return _from_api(reference, settings, api_url, headers)


def contract_options(command: F) -> F:
    """``--contract``, ``--action``, ``--data-class``, ``--contract-api`` and
    ``--contract-api-header`` for a command that gets ``settings`` and ``message``: the message
    it gets carries the contract's metadata, and the contract extensions are activated."""

    @click.option(
        "--contract",
        "reference",
        metavar="ID|FILE",
        help="Send under this contract: its interaction id, or a file with the document "
        "(accord contracts show URL ID --json > contract.json).",
    )
    @click.option("--action", metavar="ACTION", help="The action asked for (with --contract).")
    @click.option(
        "--data-class",
        "data_classes",
        multiple=True,
        metavar="CLASS",
        help="A data class the message carries (with --contract). Repeatable.",
    )
    @click.option(
        "--contract-api",
        "api_url",
        metavar="URL",
        help="The operators' API to read --contract ID from (default: the agent's URL).",
    )
    @click.option(
        "--contract-api-header",
        "api_headers",
        multiple=True,
        metavar="NAME:VALUE",
        help="A header for --contract-api (X-API-Key:… of an operator). Repeatable.",
    )
    @wraps(command)
    def wrapper(
        settings: Settings,
        *,
        message: Message,
        reference: str | None,
        action: str | None,
        data_classes: tuple[str, ...],
        api_url: str | None,
        api_headers: tuple[str, ...],
        **kwargs: Any,
    ) -> Any:
        if reference is None:
            if action or data_classes or api_url or api_headers:
                _usage("--action, --data-class and --contract-api go with --contract")
            return command(settings, message=message, **kwargs)
        import msgspec

        from accord.contracts import CONTRACTS_URI, TRUST_URI, under_contract

        document = contract_document(reference, settings, api_url, api_headers)
        metadata = dict(message.metadata) if isinstance(message.metadata, dict) else {}
        metadata.update(under_contract(document, action, data_classes))
        message = msgspec.structs.replace(message, metadata=metadata)
        # (accord's own contract client activates both; a server may require it)
        extensions = tuple(dict.fromkeys((*settings.extensions, TRUST_URI, CONTRACTS_URI)))
        settings = dataclasses.replace(settings, extensions=extensions)
        return command(settings, message=message, **kwargs)

    return wrapper  # type: ignore[return-value]
