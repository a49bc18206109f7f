"""``accord chat``: a terminal conversation client (Textual) on accord's client library: the
reply streams in as it is written, ``/`` completes the card's commands and the chat's own
(``/new``, ``/invite``), Ctrl+D completes the conversation, Ctrl+N starts a new one and Ctrl+C
cancels it (see docs/client.md, "The chat client")."""

from accord.chat._app import ChatApp

__all__ = [
    "ChatApp",
]
