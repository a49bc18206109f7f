"""How the client commands show A2A objects to a person (``--json`` prints ProtoJSON instead)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from accord.cli._output import id_column, print_table
from accord.wire import (
    AgentCard,
    APIKeySecurityScheme,
    Artifact,
    AuthenticationInfo,
    HTTPAuthSecurityScheme,
    Message,
    OAuth2SecurityScheme,
    OpenIdConnectSecurityScheme,
    Part,
    SecurityScheme,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

TOKEN_FLAGS = "--token TOKEN or $ACCORD_TOKEN"


def state_of(status: TaskStatus) -> TaskState:
    return status.state if isinstance(status.state, TaskState) else TaskState.UNSPECIFIED


def short_state(state: TaskState) -> str:
    return state.value.removeprefix("TASK_STATE_").lower().replace("_", "-")


def parts_text(parts: list[Part]) -> str:
    out: list[str] = []
    for part in parts:
        if isinstance(part.text, str):
            out.append(part.text)
        elif isinstance(part.url, str):
            out.append(f"<{part.url}>")
        elif isinstance(part.raw, bytes):
            about = " ".join(x for x in (part.filename, part.media_type) if x)
            out.append(f"<{len(part.raw)} bytes {about}>".replace(" >", ">"))
        else:
            out.append(json.dumps(part.data, ensure_ascii=False))
    return "".join(out)


# The status extension's key (the harness): why a task is INPUT_REQUIRED, shown beside it.
SUB_STATE_KEY = "io.github.madarauchiha-314.tiny-harness/status"


def sub_state(metadata: Any) -> str:
    """The sub-state a task's or a status update's metadata gives ("" for none)."""
    value = metadata.get(SUB_STATE_KEY) if isinstance(metadata, dict) else None
    found = value.get("sub_state") if isinstance(value, dict) else None
    return found if isinstance(found, str) else ""


def _status_line(
    status: TaskStatus, metadata: Any = None, *, said: frozenset[str] = frozenset()
) -> str:
    """The state, its sub-state, and the status message (unless its text is in ``said``)."""
    line = short_state(state_of(status))
    reason = sub_state(metadata)
    if reason and state_of(status) is TaskState.INPUT_REQUIRED:
        line += f" ({escape(reason)})"
    if isinstance(status.message, Message):
        text = parts_text(status.message.parts)
        if text not in said:
            line += f": {escape(text)}"
    return line


def print_task(
    out: Console,
    task: Task,
    *,
    history: bool = False,
    artifact_ids: list[str] | None = None,
) -> None:
    """``task``: its state line, context, artifacts and (``history``) messages.

    ``artifact_ids``: only these artifacts, in this order (a turn's, not the whole
    conversation's). A status message that repeats an artifact printed (a conversation's
    answer is both the ``reply`` artifact and the status message) is not printed twice."""
    artifacts = task.artifacts
    if artifact_ids is not None:
        by_id = {artifact.artifact_id: artifact for artifact in task.artifacts}
        artifacts = [by_id[i] for i in artifact_ids if i in by_id]
    said = frozenset(parts_text(a.parts) for a in artifacts)
    out.print(
        f"task {escape(task.id)} [bold]{_status_line(task.status, task.metadata, said=said)}[/bold]"
    )
    if task.context_id:
        out.print(f"  context {task.context_id}", style="dim", markup=False)
    for artifact in artifacts:
        _print_artifact(out, artifact)
    if history:
        for message in task.history:
            out.print(f"  {message.role}: {parts_text(message.parts)}", style="dim", markup=False)


def _artifact_label(artifact: Artifact) -> str:
    return f"  [cyan]{escape('[' + (artifact.name or artifact.artifact_id) + ']')}[/cyan] "


def _print_artifact(out: Console, artifact: Artifact) -> None:
    out.print(_artifact_label(artifact) + escape(parts_text(artifact.parts)))


def print_message(out: Console, message: Message) -> None:
    out.print(f"[bold]{message.role}[/bold]: {escape(parts_text(message.parts))}")


# --- the card ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemeView:
    """A security scheme of a card: what it is, and how the ``accord`` commands pass it."""

    name: str
    what: str
    how: str  # "" when the command line cannot present it


def scheme_view(name: str, scheme: SecurityScheme) -> SchemeView:
    api_key = scheme.api_key_security_scheme
    if isinstance(api_key, APIKeySecurityScheme):
        in_header = api_key.location.lower() == "header"
        how = f"--header '{api_key.name}: KEY'" if in_header else ""
        return SchemeView(name, f"API key in {api_key.location} {api_key.name!r}", how)
    http = scheme.http_auth_security_scheme
    if isinstance(http, HTTPAuthSecurityScheme):
        what = f"HTTP {http.scheme}" + (f" ({http.bearer_format})" if http.bearer_format else "")
        if http.scheme.lower() == "bearer":
            return SchemeView(name, what, TOKEN_FLAGS)
        return SchemeView(name, what, f"--header 'Authorization: {http.scheme} …'")
    if isinstance(scheme.oauth2_security_scheme, OAuth2SecurityScheme):
        return SchemeView(name, "OAuth 2.0", f"an access token: {TOKEN_FLAGS}")
    if isinstance(scheme.open_id_connect_security_scheme, OpenIdConnectSecurityScheme):
        return SchemeView(name, "OpenID Connect", f"a token: {TOKEN_FLAGS}")
    return SchemeView(name, "mutual TLS", "")


def scheme_views(card: AgentCard) -> list[SchemeView]:
    return [scheme_view(name, scheme) for name, scheme in card.security_schemes.items()]


def print_card(out: Console, card: AgentCard) -> None:
    out.print(f"[bold]{escape(card.name)}[/bold] {escape(card.version)}")
    out.print(card.description, markup=False)
    table = Table(
        "binding", "version", id_column("url"), "tenant", title="interfaces", title_justify="left"
    )
    for interface in card.supported_interfaces:
        table.add_row(
            *(
                Text(value)
                for value in (
                    interface.protocol_binding,
                    interface.protocol_version,
                    interface.url,
                    interface.tenant,
                )
            )
        )
    print_table(out, table)
    caps = card.capabilities
    flags = {
        "streaming": caps.streaming,
        "push notifications": caps.push_notifications,
        "extended card": caps.extended_agent_card,
    }
    out.print("capabilities: " + (", ".join(k for k, v in flags.items() if v is True) or "none"))
    for extension in caps.extensions:
        required = " (required)" if extension.required else ""
        out.print(f"extension: {extension.uri}{required}", markup=False)
    _print_security(out, card)
    for skill in card.skills:
        about = escape(f"{skill.name} - {skill.description}")
        out.print(f"skill [cyan]{escape(skill.id)}[/cyan]: {about}")


def _print_security(out: Console, card: AgentCard) -> None:
    views = scheme_views(card)
    if not views:
        out.print("security: none declared")
        return
    table = Table(
        id_column("scheme"), "what", "with accord", title="security", title_justify="left"
    )
    for view in views:
        table.add_row(Text(view.name), Text(view.what), Text(view.how or "not supported"))
    print_table(out, table)
    if card.security_requirements:
        alternatives = [
            " + ".join(requirement.schemes) or "nothing"
            for requirement in card.security_requirements
        ]
        out.print("required: " + " or ".join(alternatives), markup=False)


# --- tables ------------------------------------------------------------------------------------


def print_tasks(out: Console, tasks: list[Task]) -> None:
    table = Table(id_column("task"), "state", id_column("context"), "updated")
    for task in tasks:
        timestamp = task.status.timestamp if isinstance(task.status.timestamp, str) else ""
        table.add_row(
            Text(task.id),
            short_state(state_of(task.status)),
            Text(task.context_id),
            timestamp,
        )
    print_table(out, table)


def print_configs(out: Console, configs: list[TaskPushNotificationConfig]) -> None:
    table = Table(id_column("id"), id_column("task"), id_column("url"), "token", "auth")
    for config in configs:
        auth = config.authentication
        table.add_row(
            Text(config.id),
            Text(config.task_id),
            Text(config.url),
            "set" if config.token else "",
            Text(auth.scheme) if isinstance(auth, AuthenticationInfo) else "",
        )
    print_table(out, table)


# --- streams -----------------------------------------------------------------------------------


class StreamPrinter:
    """Renders events as they arrive: state changes on their own line, artifact text inline."""

    def __init__(self, out: Console) -> None:
        self.out = out
        self.open_artifact: str | None = None  # an artifact whose text line is still open

    def _close_line(self) -> None:
        if self.open_artifact is not None:
            self.out.print()
            self.open_artifact = None

    def show(self, event: StreamResponse) -> None:
        if isinstance(event.task, Task):
            self._close_line()
            self.out.print(
                f"task {escape(event.task.id)} "
                f"[bold]{_status_line(event.task.status, event.task.metadata)}[/bold]"
            )
            for artifact in event.task.artifacts:
                _print_artifact(self.out, artifact)
        elif isinstance(event.status_update, TaskStatusUpdateEvent):
            self._close_line()
            update = event.status_update
            self.out.print(f"[bold]→ {_status_line(update.status, update.metadata)}[/bold]")
        elif isinstance(event.artifact_update, TaskArtifactUpdateEvent):
            self._artifact(event.artifact_update)
        elif isinstance(event.message, Message):
            self._close_line()
            print_message(self.out, event.message)

    def _artifact(self, update: TaskArtifactUpdateEvent) -> None:
        artifact = update.artifact
        if not (update.append and self.open_artifact == artifact.artifact_id):
            self._close_line()
            self.out.print(_artifact_label(artifact), end="")
            self.open_artifact = artifact.artifact_id
        self.out.print(parts_text(artifact.parts), end="", markup=False)
        if update.last_chunk:
            self._close_line()

    def finish(self) -> None:
        self._close_line()
