"""Requests the harness makes to its own engine: a sub-task's end told to its parent, a
relayed answer passed on to the sub-task that asked, a child's brief, a cascade's cancel.

They go through the engine as any request does (intake, the membership boundary, safe
retries by message id), as a caller no network request can be: its actor is none that
authentication grants (accord.auth knows a closed set).
"""

from __future__ import annotations

from accord.core import CLIENT_ACTOR, Caller
from accord.harness.core._identity import HARNESS_ACTOR, is_harness

__all__ = ["HARNESS_ACTOR", "as_harness", "is_harness"]


def as_harness(identity: str, tenant: str) -> Caller:
    """The harness speaking as ``identity`` (itself, or a participant whose answer it
    passes on) in ``tenant``."""
    return Caller(
        identity=identity,
        tenant=tenant,
        actors=frozenset({CLIENT_ACTOR, HARNESS_ACTOR}),
        authenticated=True,
    )
