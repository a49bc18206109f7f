"""The two HTTP clients a model adapter takes — accord's own (``client = "accord"``) and the
provider's package's (``client = "package"``) — so that the adapters' tests run over each:
a module imports :func:`model_client` (an autouse fixture, parametrized), and builds its
clients with :func:`openai_client` and :func:`anthropic_client`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from accord.harness.models._anthropic import headers
from accord.harness.models._http import HttpClient

CLIENTS = ("accord", "package")
KEY = "test-key"


class _Chosen:
    kind = "accord"


chosen = _Chosen()


@pytest.fixture(autouse=True, params=CLIENTS)
def model_client(request: pytest.FixtureRequest) -> Iterator[str]:
    """The client the test's models use (set for the test, then back to accord's)."""
    chosen.kind = request.param
    yield request.param
    chosen.kind = "accord"


def openai_client(base_url: str, *, timeout: float = 120.0) -> Any:
    if chosen.kind == "accord":
        return HttpClient(base_url, {"Authorization": f"Bearer {KEY}"}, timeout_s=timeout)
    return AsyncOpenAI(api_key=KEY, base_url=base_url, max_retries=0, timeout=timeout)


def anthropic_client(base_url: str, *, timeout: float = 600.0) -> Any:
    if chosen.kind == "accord":
        return HttpClient(base_url, headers(KEY), timeout_s=timeout)
    return AsyncAnthropic(api_key=KEY, base_url=base_url, max_retries=0, timeout=timeout)
