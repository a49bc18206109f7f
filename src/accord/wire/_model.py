"""The A2A 1.0.1 data model (proto package ``lf.a2a.v1``) as msgspec Structs.

Field names are snake_case in Python and camelCase on the wire (``rename="camel"``). Proto3
fields without presence default to their zero value and are omitted when they hold it, as
ProtoJSON does; fields the proto marks ``optional`` (and message fields) default to ``UNSET`` so
an explicit ``0`` / ``false`` / ``{}`` survives a round trip. Fields the proto marks REQUIRED have
no default, so decoding fails with the field's path when they are missing.

Enums are ``str`` enums whose values are the proto names. The proto also allows enum numbers on
input; those arrive as ``int`` and are turned into the enum in ``__post_init__``.
"""

from __future__ import annotations

import builtins
import enum
from typing import Any, ClassVar

import msgspec
from msgspec import UNSET, UnsetType

from accord.wire._time import format_timestamp, is_canonical, parse_timestamp

__all__ = [
    "UNSET",
    "APIKeySecurityScheme",
    "AgentCapabilities",
    "AgentCard",
    "AgentCardSignature",
    "AgentExtension",
    "AgentInterface",
    "AgentProvider",
    "AgentSkill",
    "Artifact",
    "AuthenticationInfo",
    "AuthorizationCodeOAuthFlow",
    "CancelTaskRequest",
    "ClientCredentialsOAuthFlow",
    "DeleteTaskPushNotificationConfigRequest",
    "DeviceCodeOAuthFlow",
    "GetExtendedAgentCardRequest",
    "GetTaskPushNotificationConfigRequest",
    "GetTaskRequest",
    "HTTPAuthSecurityScheme",
    "ImplicitOAuthFlow",
    "ListTaskPushNotificationConfigsRequest",
    "ListTaskPushNotificationConfigsResponse",
    "ListTasksRequest",
    "ListTasksResponse",
    "Message",
    "MutualTlsSecurityScheme",
    "OAuth2SecurityScheme",
    "OAuthFlows",
    "OpenIdConnectSecurityScheme",
    "Part",
    "PasswordOAuthFlow",
    "Role",
    "SecurityRequirement",
    "SecurityScheme",
    "SendMessageConfiguration",
    "SendMessageRequest",
    "SendMessageResponse",
    "StreamResponse",
    "StringList",
    "SubscribeToTaskRequest",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskPushNotificationConfig",
    "TaskState",
    "TaskStatus",
    "TaskStatusUpdateEvent",
    "UnsetType",
    "Wire",
]

# Marks a field name inside a ``__post_init__`` error so the codec can report the field's path
# (msgspec reports the path of the struct, not of the field, for such errors).
FIELD_MARK = "\x00"


def invalid(field: str, description: str) -> ValueError:
    """An error for ``field`` of the struct being decoded; the codec turns it into a path."""
    return ValueError(f"{FIELD_MARK}{field}{FIELD_MARK}{description}")


class Wire(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True, gc=False):
    """Base of every wire message."""


class TaskState(enum.StrEnum):
    UNSPECIFIED = "TASK_STATE_UNSPECIFIED"
    SUBMITTED = "TASK_STATE_SUBMITTED"
    WORKING = "TASK_STATE_WORKING"
    COMPLETED = "TASK_STATE_COMPLETED"
    FAILED = "TASK_STATE_FAILED"
    CANCELED = "TASK_STATE_CANCELED"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    REJECTED = "TASK_STATE_REJECTED"
    AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL

    @property
    def interrupted(self) -> bool:
        return self in _INTERRUPTED


_TERMINAL = frozenset(
    {TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED}
)
_INTERRUPTED = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})
_TASK_STATE_BY_NUMBER = dict(enumerate(TaskState))


class Role(enum.StrEnum):
    UNSPECIFIED = "ROLE_UNSPECIFIED"
    USER = "ROLE_USER"
    AGENT = "ROLE_AGENT"


_ROLE_BY_NUMBER = dict(enumerate(Role))


def _enum_from_number(table: dict[int, Any], field: str, value: int) -> Any:
    try:
        return table[value]
    except KeyError:
        raise invalid(field, f"unknown enum number {value}") from None


# --- content -------------------------------------------------------------------------------


class Part(Wire):
    """One piece of content: exactly one of ``text``, ``raw``, ``url`` or ``data``."""

    text: str | UnsetType = UNSET
    raw: bytes | UnsetType = UNSET
    url: str | UnsetType = UNSET
    data: Any | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    filename: str = ""
    media_type: str = ""

    def __post_init__(self) -> None:
        count = (
            (self.text is not UNSET)
            + (self.raw is not UNSET)
            + (self.url is not UNSET)
            + (self.data is not UNSET)
        )
        if count != 1:
            raise invalid(
                "content",
                "a part must hold exactly one of text, raw, url or data"
                + (f" (found {count})" if count else ""),
            )

    @property
    def kind(self) -> str:
        if self.text is not UNSET:
            return "text"
        if self.raw is not UNSET:
            return "raw"
        if self.url is not UNSET:
            return "url"
        return "data"


class Message(Wire):
    message_id: str
    role: Role | int
    parts: list[Part]
    context_id: str = ""
    task_id: str = ""
    metadata: dict[str, Any] | UnsetType = UNSET
    extensions: list[str] = []
    reference_task_ids: list[str] = []

    def __post_init__(self) -> None:
        if type(self.role) is int:
            self.role = _enum_from_number(_ROLE_BY_NUMBER, "role", self.role)
        if self.role is Role.UNSPECIFIED:
            raise invalid("role", "role must be ROLE_USER or ROLE_AGENT")
        if not self.parts:
            raise invalid("parts", "a message needs at least one part")
        if not self.message_id:
            raise invalid("messageId", "messageId must not be empty")

    def text(self) -> str:
        """The text parts joined, the way most agents read a message."""
        return "".join(p.text for p in self.parts if isinstance(p.text, str))


class Artifact(Wire):
    artifact_id: str
    parts: list[Part]
    name: str = ""
    description: str = ""
    metadata: dict[str, Any] | UnsetType = UNSET
    extensions: list[str] = []

    def __post_init__(self) -> None:
        if not self.parts:
            raise invalid("parts", "an artifact needs at least one part")


# --- tasks ---------------------------------------------------------------------------------


class TaskStatus(Wire):
    state: TaskState | int
    message: Message | UnsetType = UNSET
    timestamp: str | UnsetType = UNSET

    def __post_init__(self) -> None:
        if type(self.state) is int:
            self.state = _enum_from_number(_TASK_STATE_BY_NUMBER, "state", self.state)
        if type(self.timestamp) is str and not is_canonical(self.timestamp):
            # A peer's timestamp in another valid form (no fraction, an offset) is kept in
            # the one form accord writes; one that is no timestamp is refused.
            try:
                self.timestamp = format_timestamp(parse_timestamp(self.timestamp))
            except ValueError:
                raise invalid("timestamp", "not an RFC 3339 timestamp") from None


class Task(Wire):
    id: str
    status: TaskStatus
    context_id: str = ""
    artifacts: list[Artifact] = []
    history: list[Message] = []
    metadata: dict[str, Any] | UnsetType = UNSET
    # A2A 1.1 preview (a2a_preview = ["1.1"]; docs/preview-1.1.md): 1 at creation, +1 per
    # streamed change. Unset, and so never on the wire, without the preview.
    generation: int | UnsetType = UNSET


class TaskStatusUpdateEvent(Wire):
    task_id: str
    context_id: str
    status: TaskStatus
    metadata: dict[str, Any] | UnsetType = UNSET
    generation: int | UnsetType = UNSET  # 1.1 preview: the task's, after this change


class TaskArtifactUpdateEvent(Wire):
    task_id: str
    context_id: str
    artifact: Artifact
    append: bool = False
    last_chunk: bool = False
    metadata: dict[str, Any] | UnsetType = UNSET
    generation: int | UnsetType = UNSET  # 1.1 preview: the task's, after this change


class _Oneof(Wire):
    """A message that is a oneof of its fields: exactly one must be set."""

    _oneof: ClassVar[tuple[str, ...]] = ()
    _oneof_name: ClassVar[str] = "payload"

    def __post_init__(self) -> None:
        count = sum(getattr(self, f) is not UNSET for f in self._oneof)
        if count != 1:
            raise invalid(
                self._oneof_name,
                f"exactly one of {', '.join(_camel(f) for f in self._oneof)} must be set",
            )

    @property
    def which(self) -> str:
        for f in self._oneof:
            if getattr(self, f) is not UNSET:
                return f
        return ""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


class StreamResponse(_Oneof):
    _oneof = ("task", "message", "status_update", "artifact_update")

    task: Task | UnsetType = UNSET
    message: Message | UnsetType = UNSET
    status_update: TaskStatusUpdateEvent | UnsetType = UNSET
    artifact_update: TaskArtifactUpdateEvent | UnsetType = UNSET


class SendMessageResponse(_Oneof):
    _oneof = ("task", "message")

    task: Task | UnsetType = UNSET
    message: Message | UnsetType = UNSET


# --- push notifications --------------------------------------------------------------------


class AuthenticationInfo(Wire):
    scheme: str
    credentials: str = ""


class TaskPushNotificationConfig(Wire):
    url: str
    tenant: str = ""
    id: str = ""
    task_id: str = ""
    token: str = ""
    authentication: AuthenticationInfo | UnsetType = UNSET


class GetTaskPushNotificationConfigRequest(Wire):
    task_id: str
    id: str
    tenant: str = ""


class DeleteTaskPushNotificationConfigRequest(Wire):
    task_id: str
    id: str
    tenant: str = ""


class ListTaskPushNotificationConfigsRequest(Wire):
    task_id: str
    tenant: str = ""
    page_size: int = 0
    page_token: str = ""


class ListTaskPushNotificationConfigsResponse(Wire):
    configs: list[TaskPushNotificationConfig] = []
    next_page_token: str = ""


# --- requests ------------------------------------------------------------------------------


class SendMessageConfiguration(Wire):
    accepted_output_modes: list[str] = []
    task_push_notification_config: TaskPushNotificationConfig | UnsetType = UNSET
    history_length: int | UnsetType = UNSET
    return_immediately: bool = False
    # 1.1 preview: refuse a message to a task whose generation is another one.
    if_generation_match: int | UnsetType = UNSET


class SendMessageRequest(Wire):
    message: Message
    tenant: str = ""
    configuration: SendMessageConfiguration | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET


class GetTaskRequest(Wire):
    id: str
    tenant: str = ""
    history_length: int | UnsetType = UNSET
    # 1.1 preview: answer once the task's generation is past this one (long-polling).
    current_generation: int | UnsetType = UNSET


class ListTasksRequest(Wire):
    tenant: str = ""
    context_id: str = ""
    status: TaskState | int = TaskState.UNSPECIFIED
    page_size: int | UnsetType = UNSET
    page_token: str = ""
    history_length: int | UnsetType = UNSET
    status_timestamp_after: str | UnsetType = UNSET
    include_artifacts: bool | UnsetType = UNSET

    def __post_init__(self) -> None:
        if type(self.status) is int:
            self.status = _enum_from_number(_TASK_STATE_BY_NUMBER, "status", self.status)


class ListTasksResponse(Wire, omit_defaults=False):
    # Every field is REQUIRED (``nextPageToken`` is "" on the last page), so this response
    # is encoded with its zero values, unlike ProtoJSON's default.
    tasks: list[Task] = []
    next_page_token: str = ""
    page_size: int = 0
    total_size: int = 0


class CancelTaskRequest(Wire):
    id: str
    tenant: str = ""
    metadata: dict[str, Any] | UnsetType = UNSET


class SubscribeToTaskRequest(Wire):
    id: str
    tenant: str = ""


class GetExtendedAgentCardRequest(Wire):
    tenant: str = ""


# --- agent card ----------------------------------------------------------------------------


class AgentInterface(Wire):
    url: str
    protocol_binding: str
    protocol_version: str
    tenant: str = ""


class AgentProvider(Wire):
    url: str
    organization: str


class AgentExtension(Wire):
    uri: str = ""
    description: str = ""
    required: bool = False
    params: dict[str, Any] | UnsetType = UNSET


class AgentCapabilities(Wire):
    streaming: bool | UnsetType = UNSET
    push_notifications: bool | UnsetType = UNSET
    extensions: list[AgentExtension] = []
    extended_agent_card: bool | UnsetType = UNSET


class StringList(Wire):
    list: builtins.list[str] = []


class SecurityRequirement(Wire):
    schemes: dict[str, StringList] = {}


class AgentSkill(Wire):
    id: str
    name: str
    description: str
    tags: list[str] = []
    examples: list[str] = []
    input_modes: list[str] = []
    output_modes: list[str] = []
    security_requirements: list[SecurityRequirement] = []


class AgentCardSignature(Wire):
    protected: str
    signature: str
    header: dict[str, Any] | UnsetType = UNSET


class APIKeySecurityScheme(Wire):
    location: str
    name: str
    description: str = ""


class HTTPAuthSecurityScheme(Wire):
    scheme: str
    description: str = ""
    bearer_format: str = ""


class AuthorizationCodeOAuthFlow(Wire):
    authorization_url: str
    token_url: str
    scopes: dict[str, str] = {}
    refresh_url: str = ""
    pkce_required: bool = False


class ClientCredentialsOAuthFlow(Wire):
    token_url: str
    scopes: dict[str, str] = {}
    refresh_url: str = ""


class ImplicitOAuthFlow(Wire):
    authorization_url: str = ""
    refresh_url: str = ""
    scopes: dict[str, str] = {}


class PasswordOAuthFlow(Wire):
    token_url: str = ""
    refresh_url: str = ""
    scopes: dict[str, str] = {}


class DeviceCodeOAuthFlow(Wire):
    device_authorization_url: str
    token_url: str
    scopes: dict[str, str] = {}
    refresh_url: str = ""


class OAuthFlows(_Oneof):
    _oneof = ("authorization_code", "client_credentials", "implicit", "password", "device_code")
    _oneof_name = "flow"

    authorization_code: AuthorizationCodeOAuthFlow | UnsetType = UNSET
    client_credentials: ClientCredentialsOAuthFlow | UnsetType = UNSET
    implicit: ImplicitOAuthFlow | UnsetType = UNSET
    password: PasswordOAuthFlow | UnsetType = UNSET
    device_code: DeviceCodeOAuthFlow | UnsetType = UNSET


class OAuth2SecurityScheme(Wire):
    flows: OAuthFlows
    description: str = ""
    oauth2_metadata_url: str = ""


class OpenIdConnectSecurityScheme(Wire):
    open_id_connect_url: str
    description: str = ""


class MutualTlsSecurityScheme(Wire):
    description: str = ""


class SecurityScheme(_Oneof):
    _oneof = (
        "api_key_security_scheme",
        "http_auth_security_scheme",
        "oauth2_security_scheme",
        "open_id_connect_security_scheme",
        "mtls_security_scheme",
    )
    _oneof_name = "scheme"

    api_key_security_scheme: APIKeySecurityScheme | UnsetType = UNSET
    http_auth_security_scheme: HTTPAuthSecurityScheme | UnsetType = UNSET
    oauth2_security_scheme: OAuth2SecurityScheme | UnsetType = UNSET
    open_id_connect_security_scheme: OpenIdConnectSecurityScheme | UnsetType = UNSET
    mtls_security_scheme: MutualTlsSecurityScheme | UnsetType = UNSET


class AgentCard(Wire):
    name: str
    description: str
    version: str
    supported_interfaces: list[AgentInterface] = []
    capabilities: AgentCapabilities = msgspec.field(default_factory=AgentCapabilities)
    default_input_modes: list[str] = []
    default_output_modes: list[str] = []
    skills: list[AgentSkill] = []
    provider: AgentProvider | UnsetType = UNSET
    documentation_url: str | UnsetType = UNSET
    security_schemes: dict[str, SecurityScheme] = {}
    security_requirements: list[SecurityRequirement] = []
    signatures: list[AgentCardSignature] = []
    icon_url: str | UnsetType = UNSET
