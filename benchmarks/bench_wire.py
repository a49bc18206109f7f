"""Wire model benchmark (run by hand): ProtoJSON decode + encode of two typical documents with
accord's msgspec model (through ``accord.wire.decode`` / ``encode``, the path the bindings use)
against an equivalent pydantic v2 model written here.

    .venv/bin/python benchmarks/bench_wire.py [--seconds 1.0] [--repeat 5]

The documents: a SendMessageRequest (a text and a data part, metadata, a configuration) and a
Task with 5 history messages and 2 artifacts. The pydantic model checks what accord's checks
(camelCase aliases with snake_case accepted, enums, the Part oneof, at least one part, required
fields) and writes the same JSON (unset and default fields left out). Numbers are the best of
``--repeat`` runs of about ``--seconds`` each, in operations per second.
"""

from __future__ import annotations

import argparse
import enum
import json
import platform
import time
from collections.abc import Callable
from typing import Any

import msgspec
import pydantic
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from accord.wire import SendMessageRequest, Task, decode, encode

# --- the documents -------------------------------------------------------------------------


def _message(index: int, role: str) -> dict[str, Any]:
    return {
        "messageId": f"msg-{index:04d}-5b1c2e",
        "contextId": "ctx-9f8e7d6c",
        "taskId": "task-0a1b2c3d",
        "role": role,
        "parts": [{"text": f"Message {index}: please summarise the quarterly figures for me."}],
    }


SEND_MESSAGE_REQUEST: dict[str, Any] = {
    "message": {
        "messageId": "msg-0001-5b1c2e",
        "contextId": "ctx-9f8e7d6c",
        "role": "ROLE_USER",
        "parts": [
            {"text": "Summarise the attached figures and flag anything unusual."},
            {
                "data": {"quarter": "Q3", "revenue": [120.5, 98.1, 143.2], "currency": "EUR"},
                "mediaType": "application/json",
            },
        ],
        "metadata": {"source": "web", "trace_id": "a1b2c3"},
    },
    "configuration": {
        "acceptedOutputModes": ["text/plain", "application/json"],
        "historyLength": 10,
        "returnImmediately": True,
    },
    "metadata": {"client": "bench"},
}

TASK: dict[str, Any] = {
    "id": "task-0a1b2c3d",
    "contextId": "ctx-9f8e7d6c",
    "status": {
        "state": "TASK_STATE_COMPLETED",
        "timestamp": "2026-11-29T15:31:56.123Z",
        "message": _message(99, "ROLE_AGENT"),
    },
    "history": [_message(i, "ROLE_USER" if i % 2 else "ROLE_AGENT") for i in range(1, 6)],
    "artifacts": [
        {
            "artifactId": "art-summary",
            "name": "summary",
            "parts": [{"text": "Revenue rose 12% quarter on quarter; costs were flat." * 3}],
        },
        {
            "artifactId": "art-table",
            "name": "figures",
            "parts": [
                {
                    "data": {"rows": [{"month": m, "value": v} for m, v in enumerate([1.5, 2, 3])]},
                    "mediaType": "application/json",
                }
            ],
            "metadata": {"generated_by": "bench"},
        },
    ],
    "metadata": {"priority": "normal"},
}

# --- the pydantic v2 equivalent ------------------------------------------------------------


class PdBase(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class PdRole(enum.Enum):
    USER = "ROLE_USER"
    AGENT = "ROLE_AGENT"


class PdState(enum.Enum):
    SUBMITTED = "TASK_STATE_SUBMITTED"
    WORKING = "TASK_STATE_WORKING"
    COMPLETED = "TASK_STATE_COMPLETED"
    FAILED = "TASK_STATE_FAILED"
    CANCELED = "TASK_STATE_CANCELED"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    REJECTED = "TASK_STATE_REJECTED"
    AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"


class PdPart(PdBase):
    text: str | None = None
    raw: pydantic.Base64Bytes | None = None
    url: str | None = None
    data: Any = None
    metadata: dict[str, Any] | None = None
    filename: str = ""
    media_type: str = ""

    @model_validator(mode="after")
    def _one_content(self) -> PdPart:
        present = self.model_fields_set & {"text", "raw", "url", "data"}
        if len(present) != 1:
            raise ValueError("a part must hold exactly one of text, raw, url or data")
        return self


class PdMessage(PdBase):
    message_id: str = Field(min_length=1)
    role: PdRole
    parts: list[PdPart] = Field(min_length=1)
    context_id: str = ""
    task_id: str = ""
    metadata: dict[str, Any] | None = None
    extensions: list[str] = []
    reference_task_ids: list[str] = []


class PdArtifact(PdBase):
    artifact_id: str
    parts: list[PdPart] = Field(min_length=1)
    name: str = ""
    description: str = ""
    metadata: dict[str, Any] | None = None
    extensions: list[str] = []


class PdTaskStatus(PdBase):
    state: PdState
    message: PdMessage | None = None
    timestamp: str | None = None


class PdTask(PdBase):
    id: str
    status: PdTaskStatus
    context_id: str = ""
    artifacts: list[PdArtifact] = []
    history: list[PdMessage] = []
    metadata: dict[str, Any] | None = None


class PdAuthenticationInfo(PdBase):
    scheme: str
    credentials: str = ""


class PdPushConfig(PdBase):
    url: str
    tenant: str = ""
    id: str = ""
    task_id: str = ""
    token: str = ""
    authentication: PdAuthenticationInfo | None = None


class PdConfiguration(PdBase):
    accepted_output_modes: list[str] = []
    task_push_notification_config: PdPushConfig | None = None
    history_length: int | None = None
    return_immediately: bool = False


class PdSendMessageRequest(PdBase):
    message: PdMessage
    tenant: str = ""
    configuration: PdConfiguration | None = None
    metadata: dict[str, Any] | None = None


def _pd_encode(model: BaseModel) -> bytes:
    return model.__pydantic_serializer__.to_json(model, by_alias=True, exclude_unset=True)


# --- measuring -----------------------------------------------------------------------------


def _rate(fn: Callable[[], object], seconds: float, repeat: int) -> float:
    """Best operations per second over ``repeat`` runs of about ``seconds`` each."""
    loops = 1
    while True:  # calibrate: a batch that takes at least 50 ms
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= 0.05:
            break
        loops *= 2
    batch = max(1, int(loops * seconds / elapsed))
    best = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        best = max(best, batch / (time.perf_counter() - start))
    return best


Case = tuple[str, bytes, Callable[[], object], Callable[[], object]]


def _case(name: str, doc: dict[str, Any], ours: type[Any], theirs: type[BaseModel]) -> Case:
    raw = json.dumps(doc).encode()
    # Both models must read the document to the same JSON before anything is timed.
    mine = json.loads(encode(decode(raw, ours)))
    other = json.loads(_pd_encode(theirs.model_validate_json(raw)))
    assert mine == other == doc, (mine, other)

    def accord_round() -> object:
        return encode(decode(raw, ours))

    def pydantic_round() -> object:
        return _pd_encode(theirs.model_validate_json(raw))

    return name, raw, accord_round, pydantic_round


def _cases() -> list[Case]:
    return [
        _case("SendMessageRequest", SEND_MESSAGE_REQUEST, SendMessageRequest, PdSendMessageRequest),
        _case("Task (5 messages, 2 artifacts)", TASK, Task, PdTask),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    print(
        f"Python {platform.python_version()}, msgspec {msgspec.__version__}, "
        f"pydantic {pydantic.VERSION}, {platform.machine()}"
    )
    print()
    print("| document | bytes | accord (msgspec) ops/s | pydantic v2 ops/s | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, raw, ours, theirs in _cases():
        a = _rate(ours, args.seconds, args.repeat)
        b = _rate(theirs, args.seconds, args.repeat)
        print(f"| {name} | {len(raw)} | {a:,.0f} | {b:,.0f} | {a / b:.1f}x |")


if __name__ == "__main__":
    main()
