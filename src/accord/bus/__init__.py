"""Waking followers of a task's log when something is appended to it.

A bus carries no events, only "task X has something new"; followers then read the log from
their own cursor. Losing nothing therefore depends on the log, not on the bus.
"""

from accord.bus._local import LocalBus, Subscription

__all__ = ["LocalBus", "Subscription"]
