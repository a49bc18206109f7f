"""Wire model <-> protobuf: direct field copy (accord.wire.protobuf) against a JSON detour.

Run: .venv/bin/python benchmarks/grpc_convert.py
The payload is a Task with 20 history messages (two parts each, one with metadata), two
artifacts, status and metadata: a typical GetTask answer.
"""

from __future__ import annotations

import timeit

from google.protobuf import json_format

from accord.wire import _codec as codec
from accord.wire import _model as w
from accord.wire._proto import a2a_pb2 as pb
from accord.wire.protobuf import from_proto, to_proto


def sample_task() -> w.Task:
    history = [
        w.Message(
            message_id=f"m{i}",
            role=w.Role.USER if i % 2 else w.Role.AGENT,
            context_id="ctx-1",
            task_id="task-1",
            parts=[
                w.Part(text=f"message number {i} " * 4),
                w.Part(
                    data={"step": i, "ok": True, "tags": ["a", "b"]}, media_type="application/json"
                ),
            ],
            metadata={"seq": i},
        )
        for i in range(20)
    ]
    artifacts = [
        w.Artifact(artifact_id=f"a{i}", name="result", parts=[w.Part(text="x" * 200)])
        for i in range(2)
    ]
    return w.Task(
        id="task-1",
        context_id="ctx-1",
        status=w.TaskStatus(state=w.TaskState.COMPLETED, timestamp="2026-11-29T15:31:56.123Z"),
        history=history,
        artifacts=artifacts,
        metadata={"owner": "bench", "n": 20},
    )


def via_json_to_proto(task: w.Task) -> pb.Task:
    return json_format.Parse(codec.encode(task), pb.Task())


def via_json_from_proto(message: pb.Task) -> w.Task:
    return codec.convert(json_format.MessageToDict(message), w.Task)


def main() -> None:
    task = sample_task()
    message = to_proto(task)
    assert from_proto(message, w.Task) == task
    assert via_json_from_proto(via_json_to_proto(task)) == task
    runs = 2000
    for label, fn in [
        ("model -> proto, direct", lambda: to_proto(task)),
        ("model -> proto, via JSON", lambda: via_json_to_proto(task)),
        ("proto -> model, direct", lambda: from_proto(message, w.Task)),
        ("proto -> model, via JSON", lambda: via_json_from_proto(message)),
    ]:
        best = min(timeit.repeat(fn, number=runs, repeat=5)) / runs
        print(f"{label:28s} {best * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
