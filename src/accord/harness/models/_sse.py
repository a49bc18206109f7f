"""A bounded reader of Server-Sent Events, as a model endpoint streams them: bytes in, as the
network hands them over, whole events out.

Lines end in LF, CRLF or CR (a CR at the end of one read waits for the next: it may be the
first half of a CRLF); ``data`` lines join with LF; a line starting with ``:`` is a comment;
a blank line ends an event (one with no ``data`` is dropped); ``id`` and ``retry`` are read
and ignored (a model call is never resumed). No line, nor an event's data, may be longer than
``max_line`` bytes: the endpoint is not trusted, and a line without an end would otherwise
grow without bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from accord.errors import AccordError

MAX_LINE = 1024 * 1024  # bytes of one line, and of one event's data


class SSEError(AccordError, ValueError):
    """The stream broke the reader's bounds (or ended inside an event)."""


@dataclass(frozen=True, slots=True)
class Event:
    data: bytes
    event: str = ""  # the ``event:`` field, if the event had one


class SSEReader:
    """Feed it what the network hands over; it returns the events those bytes completed."""

    __slots__ = ("_data", "_event", "_max", "_rest")

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self._max = max_line
        self._rest = b""  # the line begun and not yet ended
        self._data: list[bytes] = []  # the data lines of the event begun
        self._event = ""

    def feed(self, received: bytes) -> list[Event]:
        buffer = self._rest + received if self._rest else received
        lines = buffer.splitlines(keepends=True)  # on LF, CRLF and CR only (bytes)
        if lines and not lines[-1].endswith(b"\n"):
            # Unfinished, or ends in a CR whose LF may come next: kept for the next read.
            self._rest = lines.pop()
            if len(self._rest) > self._max + 1:
                raise SSEError(f"an event-stream line longer than {self._max} bytes")
        else:
            self._rest = b""
        events: list[Event] = []
        for line in lines:
            self._line(line.rstrip(b"\r\n"), events)
        return events

    def end(self) -> list[Event]:
        """The stream ended: its last line, if unfinished, and an event left open (without
        the blank line that would have ended it) are refused rather than guessed at."""
        rest, self._rest = self._rest, b""
        events: list[Event] = []
        if rest:
            self._line(rest.rstrip(b"\r\n"), events)
            if rest.endswith(b"\r"):
                return events  # (the CR did end that line)
        if self._data:
            raise SSEError("the event stream ended inside an event")
        return events

    def _line(self, line: bytes, events: list[Event]) -> None:
        if len(line) > self._max:
            raise SSEError(f"an event-stream line longer than {self._max} bytes")
        if not line:
            if self._data:
                data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
                events.append(Event(data, self._event))
            self._data, self._event = [], ""
            return
        if line[0] == 0x3A:  # ":" a comment (a keep-alive)
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
            if len(self._data) > 1 and sum(map(len, self._data)) > self._max:
                raise SSEError(f"an event's data longer than {self._max} bytes")
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        # id, retry and unknown fields: ignored
