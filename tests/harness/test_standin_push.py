"""A stand-in's push registration (pure): one registration under way at a time, taken
over when its node died, ended only by the registration that began it."""

from __future__ import annotations

from accord.harness.core import _standin as standin
from accord.harness.core._delegation import RemoteState

STALE = 60_000


def test_a_registration_begins_once_until_it_is_stale() -> None:
    remote = RemoteState(agent="b", task_id="t", state="WORKING")
    first = standin.push_begun("h1", 1_000, STALE)(remote)
    assert first.push is not None and first.push.token_sha256 == "h1"
    assert standin.push_begun("h2", 30_000, STALE)(first) == first  # (another's, under way)
    taken_over = standin.push_begun("h2", 61_000, STALE)(first)  # (its node died)
    assert taken_over.push is not None and taken_over.push.token_sha256 == "h2"


def test_only_the_registration_that_began_ends_it() -> None:
    begun = standin.push_begun("h1", 0, STALE)(RemoteState(agent="b", task_id="t"))
    assert standin.push_ended("h2")(begun) == begun
    registered = standin.push_ended("h1")(begun)
    assert registered.push is not None and registered.push.registered
    assert standin.push_begun("h3", 10**9, STALE)(registered) == registered  # never again
    refused = standin.push_ended("h1", "push not supported")(begun)
    assert refused.push is not None
    assert (refused.push.registered, refused.push.refused) == (False, "push not supported")
    assert standin.push_begun("h3", 10**9, STALE)(refused) == refused
