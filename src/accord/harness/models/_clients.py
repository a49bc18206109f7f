"""The one HTTP client of an endpoint, as its ``client`` setting says: accord's own
(:class:`HttpClient`, the default) or the provider's package's (``AsyncOpenAI``,
``AsyncAnthropic``, imported only then); and closing it."""

from __future__ import annotations

import logging
from typing import Any

from accord.harness.models._endpoint import AnthropicEndpoint, Endpoint
from accord.harness.models._http import HttpClient, UnsupportedProxy

log = logging.getLogger("accord.harness.model")


def endpoint_client(endpoint: Endpoint | AnthropicEndpoint) -> Any:
    """A client of ``endpoint``, shared by every model of it. accord's, unless the settings
    ask for the package's or the environment names a proxy accord's cannot use (not
    http://): then the package's, with a log line."""
    # The key given, never looked for elsewhere (the anthropic package would read its own
    # files); a local server may want none, a client wants something.
    key = endpoint.api_key() or "unused"
    anthropic = isinstance(endpoint, AnthropicEndpoint)
    if endpoint.client == "accord":
        if anthropic:
            from accord.harness.models._anthropic import headers

            given = headers(key)
        else:
            given = {"Authorization": f"Bearer {key}"}
        try:
            return HttpClient(endpoint.base_url, given, timeout_s=endpoint.timeout_s)
        except UnsupportedProxy as exc:
            log.warning(
                "model endpoint %s: %s; its calls go through the %s package's client",
                endpoint.base_url,
                exc,
                "anthropic" if anthropic else "openai",
            )
    make: Any
    if anthropic:
        from anthropic import AsyncAnthropic as make
    else:
        from openai import AsyncOpenAI as make
    return make(
        api_key=key,
        base_url=endpoint.base_url,
        timeout=endpoint.timeout_s,
        max_retries=0,  # accord retries, and only before an answer has begun
    )


async def close_client(client: Any) -> None:
    """Closes an endpoint's client (its kept connections)."""
    if isinstance(client, HttpClient):
        await client.aclose()
    else:
        await client.close()  # (AsyncOpenAI's and AsyncAnthropic's)
