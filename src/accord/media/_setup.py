"""Media as the application assembles it (accord.app): the gate on the engine, the files for
the agent, the ``/media`` endpoint, the card's extension."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accord.agents import Host, ReadsMedia
from accord.media._endpoint import MediaEndpoint
from accord.media._ingest import MEDIA_PATH, MediaIngest
from accord.media._settings import MediaSettings
from accord.media._tables import MediaStore, media_store
from accord.server import Binding
from accord.wire import AgentExtension

MEDIA_URI = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/media/v1"


def card_extension(settings: MediaSettings, base_url: str) -> AgentExtension:
    """The media extension as the card lists it: what files are taken and given, the
    limits, and where files are uploaded."""
    return AgentExtension(
        uri=MEDIA_URI,
        required=False,
        description="file parts are stored and served from this server (url parts rewritten)",
        params={
            "accepted": list(settings.accepted),
            "produced": list(settings.produced),
            "maxFileBytes": settings.max_file_bytes,
            "maxMessageBytes": settings.max_message_bytes,
            "maxAudioSeconds": settings.max_audio_seconds,
            "uploadUrl": base_url.rstrip("/") + MEDIA_PATH,
        },
    )


@dataclass(frozen=True)
class TaskFiles:
    """The files of a task's messages, for an agent that reads them (accord.agents.MediaFiles)."""

    files: MediaStore
    text_chars: int

    async def load(self, tenant: str, task_id: str, media_id: str) -> tuple[str, str, bytes] | None:
        file = await self.files.get(tenant, media_id)
        if file is None or not task_id or file.task_id != task_id:
            return None
        data = b"".join([chunk async for chunk in self.files.read(file.id, 0, file.size)])
        return file.media_type, file.filename, data


def attach(settings: MediaSettings, engine: Host, agent: Any, base_url: str) -> MediaIngest:
    """Media on ``engine`` (before it starts): its tables in the engine's store, its gate
    first among the engine's gates (the gates after it see the rewritten parts), and the
    files handed to an agent that reads them."""
    files = media_store(engine.store)
    ingest = MediaIngest(files, settings, base_url, clock=engine.clock)
    engine.add_gate(ingest)
    if isinstance(agent, ReadsMedia):
        agent.attach_media(TaskFiles(files, settings.model_text_chars))
    return ingest


def endpoint(ingest: MediaIngest, binding: Binding) -> MediaEndpoint:
    return MediaEndpoint(ingest, binding)
