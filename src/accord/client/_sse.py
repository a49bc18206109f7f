"""A sans-I/O parser for ``text/event-stream`` (the WHATWG "server-sent events" format).

Feed it bytes as they arrive, get back the events they complete. It does no I/O and keeps
no clock, so it works the same under any transport and is easy to test chunk by chunk::

    parser = SSEParser()
    for chunk in chunks:
        for event in parser.feed(chunk):
            ...
    for event in parser.close():  # a last event the server did not end with a blank line
        ...

Handled: ``:`` comments (keep-alives), ``event:``, ``id:`` (remembered across events, as the
spec says, and ignored when it contains NUL), ``retry:`` (digits only), multi-line ``data:``,
one optional space after the colon, lines ended by CRLF, LF or a lone CR (also when a CRLF is
split across two chunks), a UTF-8 BOM at the start, and UTF-8 sequences split across chunks.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event.

    ``id`` is the stream's last event id when the event was dispatched ("" when the server
    never sent one); ``retry`` is the reconnection delay in milliseconds if this event's block
    carried a ``retry:`` field.
    """

    data: str
    event: str = "message"
    id: str = ""
    retry: int | None = None


class SSEParser:
    """Incremental event-stream parser: ``feed`` bytes, ``close`` at end of stream."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""  # text not yet ended by a line break
        self._skip_lf = False  # the last chunk ended with CR: a leading LF belongs to it
        self._started = False  # past the (optional) BOM
        self._data: list[str] = []
        self._event = ""
        self._retry: int | None = None
        self._has_data = False
        self.last_event_id = ""
        self.retry: int | None = None  # the latest reconnection delay the server asked for

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Parse ``chunk`` and return the events it completes, in order."""
        return self._feed_text(self._decoder.decode(chunk))

    def close(self) -> list[ServerSentEvent]:
        """End of stream: flush an unterminated last line and a last event without a blank line.

        The WHATWG algorithm drops such an event; servers that forget the final blank line are
        common enough that losing their last (often terminal) event would be worse.
        """
        events = self._feed_text(self._decoder.decode(b"", final=True))
        if self._buffer:
            line, self._buffer = self._buffer, ""
            self._line(line)
        event = self._dispatch()
        if event is not None:
            events.append(event)
        return events

    # --- internals ---------------------------------------------------------------------

    def _feed_text(self, text: str) -> list[ServerSentEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._skip_lf:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        events: list[ServerSentEvent] = []
        text = self._buffer + text
        start = 0
        length = len(text)
        while True:
            cr = text.find("\r", start)
            lf = text.find("\n", start)
            if cr < 0 and lf < 0:
                break
            if cr < 0 or (0 <= lf < cr):
                end, nxt = lf, lf + 1
            elif cr + 1 < length:
                end, nxt = cr, cr + 2 if text[cr + 1] == "\n" else cr + 1
            else:  # CR is the last character: the LF of a CRLF may be in the next chunk
                end, nxt = cr, cr + 1
                self._skip_lf = True
            line = text[start:end]
            start = nxt
            if line:
                self._line(line)
            else:
                event = self._dispatch()
                if event is not None:
                    events.append(event)
        self._buffer = text[start:]
        return events

    def _line(self, line: str) -> None:
        if line.startswith(":"):
            return  # a comment, usually a keep-alive
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self._has_data = True
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            self._retry = self.retry = int(value)
        # any other field is ignored, as the format requires

    def _dispatch(self) -> ServerSentEvent | None:
        data, event, retry = self._data, self._event, self._retry
        has_data = self._has_data
        self._data, self._event, self._retry, self._has_data = [], "", None, False
        if not has_data:
            return None
        return ServerSentEvent(
            data="\n".join(data), event=event or "message", id=self.last_event_id, retry=retry
        )
