"""Task and context ids: RFC 9562 version 7 UUIDs, so that tasks created close together sit
close together in every index keyed by id (one B-tree page per group commit instead of one
per task), while 74 random bits keep them unguessable."""

from __future__ import annotations

import time
import uuid

from accord.engine._engine import _new_id


def test_new_ids_are_version_7_uuids_carrying_the_creation_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    text = _new_id()
    after = time.time_ns() // 1_000_000
    parsed = uuid.UUID(text)
    assert str(parsed) == text  # canonical lower-case text
    assert parsed.version == 7
    assert parsed.variant == uuid.RFC_4122
    assert before <= parsed.int >> 80 <= after


def test_new_ids_sort_by_creation_time_and_do_not_repeat() -> None:
    first = [_new_id() for _ in range(1000)]
    time.sleep(0.002)
    second = [_new_id() for _ in range(1000)]
    assert len(set(first + second)) == 2000
    assert max(first) < min(second)  # a later millisecond sorts after every earlier id


def test_new_ids_differ_in_their_random_bits_within_one_millisecond() -> None:
    ids = [uuid.UUID(_new_id()) for _ in range(200)]
    random_bits = {u.int & ((1 << 62) - 1) for u in ids}
    assert len(random_bits) == 200
