"""Hypothesis strategies for every wire message, shared by the codec and interop tests.

Values are valid A2A: required strings are non-empty (ProtoJSON writers omit empty strings,
so an empty required field would not survive a peer), enums are never UNSPECIFIED where the
proto requires them, numbers in ``Struct`` values fit a double exactly.
"""

from __future__ import annotations

import string
from typing import Any

from hypothesis import strategies as st

from accord.wire import _model as w
from accord.wire._time import format_timestamp

UNSET = w.UNSET

ids = st.text(alphabet=string.ascii_letters + string.digits + "-_.", min_size=1, max_size=12)
texts = st.text(max_size=16)
required_texts = st.text(min_size=1, max_size=16)
timestamps = st.integers(min_value=0, max_value=4_102_444_800_000).map(format_timestamp)
int32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)

# Struct keys that look like model field names: the codec must leave them alone.
_tricky_keys = st.sampled_from(["task_id", "context_id", "message_id", "media_type", "list"])
json_keys = st.one_of(st.text(max_size=8), _tricky_keys)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(json_keys, inner, max_size=3)
    ),
    max_leaves=6,
)
structs = st.dictionaries(json_keys, json_values, max_size=3)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The value, or UNSET (the field is absent)."""
    return st.one_of(st.just(UNSET), strategy)


def _part(content: dict[str, Any], metadata: Any, filename: str, media_type: str) -> w.Part:
    return w.Part(**content, metadata=metadata, filename=filename, media_type=media_type)


parts = st.builds(
    _part,
    st.one_of(
        st.builds(lambda v: {"text": v}, texts),
        st.builds(lambda v: {"raw": v}, st.binary(max_size=12)),
        st.builds(lambda v: {"url": v}, texts),
        st.builds(lambda v: {"data": v}, json_values),
    ),
    maybe(structs),
    texts,
    texts,
)

roles = st.sampled_from([w.Role.USER, w.Role.AGENT])
states = st.sampled_from([s for s in w.TaskState if s is not w.TaskState.UNSPECIFIED])
string_lists = st.lists(texts, max_size=2)

messages = st.builds(
    w.Message,
    message_id=ids,
    role=roles,
    parts=st.lists(parts, min_size=1, max_size=3),
    context_id=st.one_of(st.just(""), ids),
    task_id=st.one_of(st.just(""), ids),
    metadata=maybe(structs),
    extensions=string_lists,
    reference_task_ids=st.lists(ids, max_size=2),
)

artifacts = st.builds(
    w.Artifact,
    artifact_id=ids,
    parts=st.lists(parts, min_size=1, max_size=2),
    name=texts,
    description=texts,
    metadata=maybe(structs),
    extensions=string_lists,
)

task_statuses = st.builds(
    w.TaskStatus, state=states, message=maybe(messages), timestamp=maybe(timestamps)
)

tasks = st.builds(
    w.Task,
    id=ids,
    status=task_statuses,
    context_id=st.one_of(st.just(""), ids),
    artifacts=st.lists(artifacts, max_size=2),
    history=st.lists(messages, max_size=2),
    metadata=maybe(structs),
)

status_updates = st.builds(
    w.TaskStatusUpdateEvent,
    task_id=ids,
    context_id=ids,
    status=task_statuses,
    metadata=maybe(structs),
)

artifact_updates = st.builds(
    w.TaskArtifactUpdateEvent,
    task_id=ids,
    context_id=ids,
    artifact=artifacts,
    append=st.booleans(),
    last_chunk=st.booleans(),
    metadata=maybe(structs),
)

stream_responses = st.one_of(
    st.builds(w.StreamResponse, task=tasks),
    st.builds(w.StreamResponse, message=messages),
    st.builds(w.StreamResponse, status_update=status_updates),
    st.builds(w.StreamResponse, artifact_update=artifact_updates),
)

send_message_responses = st.one_of(
    st.builds(w.SendMessageResponse, task=tasks),
    st.builds(w.SendMessageResponse, message=messages),
)

authentication_infos = st.builds(w.AuthenticationInfo, scheme=required_texts, credentials=texts)

push_configs = st.builds(
    w.TaskPushNotificationConfig,
    url=required_texts,
    tenant=texts,
    id=st.one_of(st.just(""), ids),
    task_id=st.one_of(st.just(""), ids),
    token=texts,
    authentication=maybe(authentication_infos),
)

get_push_config_requests = st.builds(
    w.GetTaskPushNotificationConfigRequest, task_id=ids, id=ids, tenant=texts
)
delete_push_config_requests = st.builds(
    w.DeleteTaskPushNotificationConfigRequest, task_id=ids, id=ids, tenant=texts
)
list_push_config_requests = st.builds(
    w.ListTaskPushNotificationConfigsRequest,
    task_id=ids,
    tenant=texts,
    page_size=int32,
    page_token=texts,
)
list_push_config_responses = st.builds(
    w.ListTaskPushNotificationConfigsResponse,
    configs=st.lists(push_configs, max_size=2),
    next_page_token=texts,
)

send_configurations = st.builds(
    w.SendMessageConfiguration,
    accepted_output_modes=string_lists,
    task_push_notification_config=maybe(push_configs),
    history_length=maybe(int32),
    return_immediately=st.booleans(),
)

send_message_requests = st.builds(
    w.SendMessageRequest,
    message=messages,
    tenant=texts,
    configuration=maybe(send_configurations),
    metadata=maybe(structs),
)

get_task_requests = st.builds(w.GetTaskRequest, id=ids, tenant=texts, history_length=maybe(int32))

list_tasks_requests = st.builds(
    w.ListTasksRequest,
    tenant=texts,
    context_id=texts,
    status=st.sampled_from(list(w.TaskState)),
    page_size=maybe(int32),
    page_token=texts,
    history_length=maybe(int32),
    status_timestamp_after=maybe(timestamps),
    include_artifacts=maybe(st.booleans()),
)

list_tasks_responses = st.builds(
    w.ListTasksResponse,
    tasks=st.lists(tasks, max_size=2),
    next_page_token=texts,
    page_size=int32,
    total_size=int32,
)

cancel_task_requests = st.builds(w.CancelTaskRequest, id=ids, tenant=texts, metadata=maybe(structs))
subscribe_requests = st.builds(w.SubscribeToTaskRequest, id=ids, tenant=texts)
extended_card_requests = st.builds(w.GetExtendedAgentCardRequest, tenant=texts)

# --- agent card ----------------------------------------------------------------------------

scopes = st.dictionaries(texts, texts, max_size=2)

authorization_code_flows = st.builds(
    w.AuthorizationCodeOAuthFlow,
    authorization_url=required_texts,
    token_url=required_texts,
    scopes=scopes,
    refresh_url=texts,
    pkce_required=st.booleans(),
)
client_credentials_flows = st.builds(
    w.ClientCredentialsOAuthFlow, token_url=required_texts, scopes=scopes, refresh_url=texts
)
implicit_flows = st.builds(
    w.ImplicitOAuthFlow, authorization_url=texts, refresh_url=texts, scopes=scopes
)
password_flows = st.builds(w.PasswordOAuthFlow, token_url=texts, refresh_url=texts, scopes=scopes)
device_code_flows = st.builds(
    w.DeviceCodeOAuthFlow,
    device_authorization_url=required_texts,
    token_url=required_texts,
    scopes=scopes,
    refresh_url=texts,
)
oauth_flows = st.one_of(
    st.builds(w.OAuthFlows, authorization_code=authorization_code_flows),
    st.builds(w.OAuthFlows, client_credentials=client_credentials_flows),
    st.builds(w.OAuthFlows, implicit=implicit_flows),
    st.builds(w.OAuthFlows, password=password_flows),
    st.builds(w.OAuthFlows, device_code=device_code_flows),
)

api_key_schemes = st.builds(
    w.APIKeySecurityScheme,
    location=st.sampled_from(["header", "query", "cookie"]),
    name=required_texts,
    description=texts,
)
http_auth_schemes = st.builds(
    w.HTTPAuthSecurityScheme,
    scheme=st.sampled_from(["Bearer", "Basic"]),
    description=texts,
    bearer_format=texts,
)
oauth2_schemes = st.builds(
    w.OAuth2SecurityScheme, flows=oauth_flows, description=texts, oauth2_metadata_url=texts
)
open_id_connect_schemes = st.builds(
    w.OpenIdConnectSecurityScheme, open_id_connect_url=required_texts, description=texts
)
mtls_schemes = st.builds(w.MutualTlsSecurityScheme, description=texts)
security_schemes = st.one_of(
    st.builds(w.SecurityScheme, api_key_security_scheme=api_key_schemes),
    st.builds(w.SecurityScheme, http_auth_security_scheme=http_auth_schemes),
    st.builds(w.SecurityScheme, oauth2_security_scheme=oauth2_schemes),
    st.builds(w.SecurityScheme, open_id_connect_security_scheme=open_id_connect_schemes),
    st.builds(w.SecurityScheme, mtls_security_scheme=mtls_schemes),
)

security_requirements = st.builds(
    w.SecurityRequirement,
    schemes=st.dictionaries(texts, st.builds(w.StringList, list=string_lists), max_size=2),
)

agent_interfaces = st.builds(
    w.AgentInterface,
    url=required_texts,
    protocol_binding=st.sampled_from(["JSONRPC", "GRPC", "HTTP+JSON"]),
    protocol_version=st.sampled_from(["1.0", "0.3"]),
    tenant=texts,
)

agent_extensions = st.builds(
    w.AgentExtension,
    uri=texts,
    description=texts,
    required=st.booleans(),
    params=maybe(structs),
)

agent_capabilities = st.builds(
    w.AgentCapabilities,
    streaming=maybe(st.booleans()),
    push_notifications=maybe(st.booleans()),
    extensions=st.lists(agent_extensions, max_size=2),
    extended_agent_card=maybe(st.booleans()),
)

agent_skills = st.builds(
    w.AgentSkill,
    id=ids,
    name=required_texts,
    description=required_texts,
    tags=string_lists,
    examples=string_lists,
    input_modes=string_lists,
    output_modes=string_lists,
    security_requirements=st.lists(security_requirements, max_size=2),
)

signatures = st.builds(
    w.AgentCardSignature,
    protected=required_texts,
    signature=required_texts,
    header=maybe(structs),
)

agent_cards = st.builds(
    w.AgentCard,
    name=required_texts,
    description=required_texts,
    version=required_texts,
    supported_interfaces=st.lists(agent_interfaces, max_size=2),
    capabilities=agent_capabilities,
    default_input_modes=string_lists,
    default_output_modes=string_lists,
    skills=st.lists(agent_skills, max_size=2),
    provider=maybe(st.builds(w.AgentProvider, url=required_texts, organization=required_texts)),
    documentation_url=maybe(texts),
    security_schemes=st.dictionaries(texts, security_schemes, max_size=3),
    security_requirements=st.lists(security_requirements, max_size=2),
    signatures=st.lists(signatures, max_size=2),
    icon_url=maybe(texts),
)

# Every top-level message of ``lf.a2a.v1`` with a strategy, by proto name. The interop test
# checks that this covers every message the official descriptors define.
BY_NAME: dict[str, st.SearchStrategy[Any]] = {
    "APIKeySecurityScheme": api_key_schemes,
    "AgentCapabilities": agent_capabilities,
    "AgentCard": agent_cards,
    "AgentCardSignature": signatures,
    "AgentExtension": agent_extensions,
    "AgentInterface": agent_interfaces,
    "AgentProvider": st.builds(w.AgentProvider, url=required_texts, organization=required_texts),
    "AgentSkill": agent_skills,
    "Artifact": artifacts,
    "AuthenticationInfo": authentication_infos,
    "AuthorizationCodeOAuthFlow": authorization_code_flows,
    "CancelTaskRequest": cancel_task_requests,
    "ClientCredentialsOAuthFlow": client_credentials_flows,
    "DeleteTaskPushNotificationConfigRequest": delete_push_config_requests,
    "DeviceCodeOAuthFlow": device_code_flows,
    "GetExtendedAgentCardRequest": extended_card_requests,
    "GetTaskPushNotificationConfigRequest": get_push_config_requests,
    "GetTaskRequest": get_task_requests,
    "HTTPAuthSecurityScheme": http_auth_schemes,
    "ImplicitOAuthFlow": implicit_flows,
    "ListTaskPushNotificationConfigsRequest": list_push_config_requests,
    "ListTaskPushNotificationConfigsResponse": list_push_config_responses,
    "ListTasksRequest": list_tasks_requests,
    "ListTasksResponse": list_tasks_responses,
    "Message": messages,
    "MutualTlsSecurityScheme": mtls_schemes,
    "OAuth2SecurityScheme": oauth2_schemes,
    "OAuthFlows": oauth_flows,
    "OpenIdConnectSecurityScheme": open_id_connect_schemes,
    "Part": parts,
    "PasswordOAuthFlow": password_flows,
    "SecurityRequirement": security_requirements,
    "SecurityScheme": security_schemes,
    "SendMessageConfiguration": send_configurations,
    "SendMessageRequest": send_message_requests,
    "SendMessageResponse": send_message_responses,
    "StreamResponse": stream_responses,
    "StringList": st.builds(w.StringList, list=string_lists),
    "SubscribeToTaskRequest": subscribe_requests,
    "Task": tasks,
    "TaskArtifactUpdateEvent": artifact_updates,
    "TaskPushNotificationConfig": push_configs,
    "TaskStatus": task_statuses,
    "TaskStatusUpdateEvent": status_updates,
}
