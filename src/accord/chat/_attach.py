"""``/attach PATH`` in ``accord chat``: a file that goes with your next message.

The command runs in the terminal (it never reaches the agent): the file is read and kept,
and the next message you send carries it as a file part after its text (the server stores
it and rewrites it to a URL of its own, docs/media.md). ``/attach`` alone lists what is
attached; ``/attach -`` drops it.
"""

from __future__ import annotations

from accord.media import FileError, file_part
from accord.wire import Part

COMMAND = "/attach"


class Attachments:
    def __init__(self) -> None:
        self.parts: list[Part] = []

    def command(self, text: str) -> str | None:
        """The notice for ``text`` when it is ``/attach …``; None when it is not."""
        head, _, rest = text.partition(" ")
        if head != COMMAND:
            return None
        path = rest.strip()
        if not path:
            names = ", ".join(part.filename for part in self.parts)
            return f"attached: {names}" if names else "nothing attached (/attach PATH)"
        if path == "-":
            self.parts.clear()
            return "attachments dropped"
        try:
            part = file_part(path)
        except FileError as error:
            return f"cannot attach {error}"
        self.parts.append(part)
        size = len(part.raw) if isinstance(part.raw, bytes) else 0
        what = f"{part.filename} ({part.media_type}, {size} bytes)"
        return f"attached {what}: sent with your next message"

    def take(self) -> list[Part]:
        """The attached files, for the message being sent (and none attached after)."""
        taken, self.parts = self.parts, []
        return taken
