"""Sub-tasks and delegation: children of a task on this harness, on other agents of the
roster, and assigned to participants (see docs/harness.md, "Sub-tasks and delegation").

- :mod:`.spawner`: making them (the Python API, ``agent.delegation``);
- :mod:`.tools`: ``spawn_subtask`` and ``create_task_for_participant``, the model's tools;
- :mod:`.follower`: keeping parents and children in step (turns, relays, cascades);
- :mod:`.remote`: following a child on another agent from its stand-in here.

The decisions are pure, in accord.harness.core._delegation and accord.harness.core._standin.
"""

from accord.harness.core._delegation import Bounds, Brief
from accord.harness.delegation._spawner import Delegation, DelegationError

__all__ = ["Bounds", "Brief", "Delegation", "DelegationError"]
