"""The task lifecycle without I/O: commands and the current state in, the seed's outcome and
the events it publishes out. Time and new ids are arguments; nothing here reads a clock, a
socket or a database."""

from accord.core import agent, client, lifecycle, negotiation, views
from accord.core._caller import (
    ADMIN_ACTOR,
    AGENT_ACTOR,
    ANONYMOUS,
    CLIENT_ACTOR,
    CONTRACT_OPERATOR_ACTOR,
    DISCOVERY_ACTOR,
    OPEN,
    Caller,
)
from accord.core._events import AFTER_KEY, Event, JournalEntry, apply, fold, leaves_work
from accord.core._grants import granted, required_actor
from accord.core._limits import Limits
from accord.core._outcome import (
    SEED_STATE_NAMES,
    Outcome,
    Published,
    artifact_published,
    refused,
    status_published,
)
from accord.core._records import PushConfigRecord, RequestKey, TaskRecord

__all__ = [
    "ADMIN_ACTOR",
    "AFTER_KEY",
    "AGENT_ACTOR",
    "ANONYMOUS",
    "CLIENT_ACTOR",
    "CONTRACT_OPERATOR_ACTOR",
    "DISCOVERY_ACTOR",
    "OPEN",
    "SEED_STATE_NAMES",
    "Caller",
    "Event",
    "JournalEntry",
    "Limits",
    "Outcome",
    "Published",
    "PushConfigRecord",
    "RequestKey",
    "TaskRecord",
    "agent",
    "apply",
    "artifact_published",
    "client",
    "fold",
    "granted",
    "leaves_work",
    "lifecycle",
    "negotiation",
    "refused",
    "required_actor",
    "status_published",
    "views",
]
