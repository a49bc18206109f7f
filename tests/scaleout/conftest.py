from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster import Node, cluster


@pytest.fixture(scope="module")
def nodes(pg_module_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Node]]:
    """Three ``accord serve`` processes on one PostgreSQL database."""
    with cluster(pg_module_url, tmp_path_factory.mktemp("cluster"), size=3) as started:
        yield started
