"""Rate limits on two ``accord serve`` nodes sharing one PostgreSQL database: per node by
default (a caller gets its burst on each node), one bucket per caller for both with
``rate_limit_shared`` (its burst across the two, then 429 with Retry-After on either)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from cluster import cluster

pytestmark = [pytest.mark.processes, pytest.mark.postgres]

KEY = "alice-key-0123456789abcd"
CONFIG = f"""
rate_limit_per_minute = 6     # a token every 10 s: none comes back during the test
rate_limit_burst = 3

[[principals]]
identity = "alice"
actors = ["a2a.tasks.Client"]
api_key = "{KEY}"
"""
HEADERS = {"A2A-Version": "1.0", "X-API-Key": KEY}


def _statuses(urls: list[str]) -> list[int]:
    return [httpx.get(f"{url}/tasks", headers=HEADERS).status_code for url in urls]


@pytest.mark.parametrize("shared", [True, False])
def test_two_nodes_share_a_callers_bucket_when_asked(
    pg_url: str, tmp_path: Path, shared: bool
) -> None:
    config = CONFIG.replace(
        "rate_limit_burst = 3", f"rate_limit_burst = 3\nrate_limit_shared = {str(shared).lower()}"
    )
    with cluster(pg_url, tmp_path, size=2, config=config) as nodes:
        a, b = nodes[0].url, nodes[1].url
        answers = _statuses([a, b, a, b, a, b])
        if shared:
            assert answers == [200, 200, 200, 429, 429, 429]
            refused = httpx.get(f"{b}/tasks", headers=HEADERS)
            assert refused.status_code == 429
            assert 1 <= int(refused.headers["retry-after"]) <= 10
        else:  # three on each node
            assert answers == [200, 200, 200, 200, 200, 200]
            assert _statuses([a, b]) == [429, 429]
