"""The task lifecycle without I/O: commands and the current state in, the seed's outcome and
the events it publishes out. Time and new ids are arguments; nothing here reads a clock, a
socket or a database."""

from accord.core import agent, client, lifecycle, negotiation, views
from accord.core._events import Event, apply, fold
from accord.core._limits import Limits
from accord.core._outcome import Outcome, Published
from accord.core._records import PushConfigRecord, TaskRecord

__all__ = [
    "Event",
    "Limits",
    "Outcome",
    "Published",
    "PushConfigRecord",
    "TaskRecord",
    "agent",
    "apply",
    "client",
    "fold",
    "lifecycle",
    "negotiation",
    "views",
]
