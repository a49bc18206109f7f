"""The bounds on the task extension's fields (accord.harness.core._fields checks them)."""

from __future__ import annotations

MAX_NAME = 200  # a task's name (and type), a step's name or id, a display name
MAX_TEXT = 20_000  # a goal, a description, an acceptance criterion, a step's description
MAX_CRITERIA = 32  # acceptance criteria of a task
MAX_ID = 256  # a participant id (an asserted one too)
MAX_PARTICIPANTS = 256  # participants of a task
MAX_STEPS = 50  # steps of a plan
