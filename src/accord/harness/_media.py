"""The files of a conversation's messages, as a model reads them (docs/media.md).

A file part the media feature stored (its part carries ``accord.media/file`` metadata and a
URL of this server) is loaded from the task's files (``accord.agents.MediaFiles``) when the
model is asked:

- an image (PNG, JPEG, GIF, WebP) goes to the model as an image input (``Entry.images``:
  Chat Completions' ``image_url`` part with a data URL, the Responses API's ``input_image``,
  Anthropic's ``image`` block);
- a text file (``text/*``, JSON, XML …) is read as UTF-8 into the entry's text, at most
  ``[media] model_text_chars`` characters, in an untrusted block (a participant's file may
  say anything);
- anything else stays the one line the transcript gives it: its name, type and URL, a
  reference the model can name.

A file of another task is never loaded (the files are looked up by the task's id).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from accord.agents import MediaFiles
from accord.harness._transcript import Conversation, Entry, Image
from accord.harness._untrusted import untrusted
from accord.wire import Part

MEDIA_KEY = "accord.media/file"  # (accord.media writes it; the harness only reads it)
IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
TEXT_TYPES = frozenset(
    {"application/json", "application/xml", "application/yaml", "application/x-yaml"}
)
MAX_IMAGES = 8  # images of one conversation a model is shown (the newest)


def _media_id(part: Part) -> str | None:
    meta = part.metadata
    if not isinstance(part.url, str) or not isinstance(meta, dict):
        return None
    found: Any = meta.get(MEDIA_KEY)
    media_id = found.get("id") if isinstance(found, dict) else None
    return media_id if isinstance(media_id, str) else None


def is_text(media_type: str) -> bool:
    return media_type.startswith("text/") or media_type in TEXT_TYPES


async def with_files(view: Conversation, files: MediaFiles | None, tenant: str) -> Conversation:
    """``view`` with its entries' files loaded (images as images, text as text)."""
    if files is None:
        return view
    history = view.task.history
    entries: list[Entry] = list(view.entries)
    shown = 0
    for index in range(len(entries) - 1, -1, -1):  # the newest first: they get the images
        entry = entries[index]
        if entry.role != "user" or not 0 <= entry.position < len(history):
            continue
        parts = [p for p in history[entry.position].parts if _media_id(p) is not None]
        if not parts:
            continue
        images: list[Image] = []
        texts: list[str] = []
        for part in parts:
            media_id = _media_id(part)
            assert media_id is not None
            loaded = await files.load(tenant, view.task.id, media_id)
            if loaded is None:
                continue
            media_type, name, data = loaded
            if media_type in IMAGES and shown < MAX_IMAGES:
                images.append(Image(media_type, data, name))
                shown += 1
            elif is_text(media_type):
                text = data.decode("utf-8", errors="replace")
                limit = files.text_chars
                if len(text) > limit:
                    text = text[:limit] + f"\n… ({len(text) - limit} more characters)"
                texts.append(untrusted(f"file:{name or media_id}", text))
        if images or texts:
            entries[index] = dataclasses.replace(
                entry,
                text="\n".join([entry.text, *texts]) if texts else entry.text,
                images=tuple(images),
            )
    return dataclasses.replace(view, entries=tuple(entries))
