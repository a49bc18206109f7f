"""The agent roster (``[[harness.agents]]``) and ``[harness.delivery]``: every refusal names
the file and the setting; credentials come only from the environment and never go in clear
to another machine."""

from __future__ import annotations

import pytest

from accord.config import ConfigError
from accord.harness._roster import Credentials, RosterAgent
from accord.harness._settings import parse
from accord.harness.channels._outbox import DeliverySettings


def table(*agents: dict[str, object], **more: object) -> dict[str, object]:
    return {"model": "scripted:x", "agents": list(agents), **more}


def test_a_roster_and_delivery_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HELPER_TOKEN", "t0ken")
    settings = parse(
        table(
            {"id": "helper", "card": "https://helper.example",
             "credentials": {"bearer_env": "HELPER_TOKEN"}},
            {"id": "local", "card": "http://127.0.0.1:9100", "credentials": "none"},
            delivery={"max_attempts": 3, "retry_base_s": 0.5},
        ),
        "h.toml",
    )  # fmt: skip
    assert settings.agents == (
        RosterAgent("helper", "https://helper.example", Credentials("bearer", "HELPER_TOKEN")),
        RosterAgent("local", "http://127.0.0.1:9100", Credentials()),
    )
    assert settings.delivery == DeliverySettings(max_attempts=3, retry_base_s=0.5)
    assert "t0ken" not in repr(settings)  # (only the variable's name is kept)


@pytest.mark.parametrize(
    ("agents", "says"),
    [
        ({"card": "https://h", "credentials": "none"}, "harness.agents[0].id: missing"),
        ({"id": "h", "credentials": "none"}, "harness.agents[0].card: missing"),
        ({"id": "h", "card": "https://h"}, "harness.agents[0].credentials: missing"),
        ({"id": "h", "card": "ftp://h", "credentials": "none"}, "card: expected"),
        ({"id": "h", "card": "https://h", "credentials": "yes"}, "credentials: expected"),
        (
            {"id": "h", "card": "https://h", "credentials": {"password": "x"}},
            "harness.agents[0].credentials: expected",
        ),
        (
            {
                "id": "h",
                "card": "https://h",
                "credentials": {"api_key_env": "NOT_SET_ANYWHERE"},
            },
            "harness.agents[0].credentials.api_key_env: $NOT_SET_ANYWHERE is not set",
        ),
        (
            {"id": "accord", "card": "https://h", "credentials": "none"},
            "harness.agents[0].id: 'accord' is the harness's own agent_id",
        ),
        (
            {"id": "h", "card": "http://helper.example", "credentials": {"bearer_env": "SET"}},
            "harness.agents[0].card: refusing to send credentials over plain HTTP",
        ),
    ],
)
def test_a_bad_agent_is_refused_naming_the_setting(
    agents: dict[str, object], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SET", "value")
    with pytest.raises(ConfigError) as refused:
        parse(table(agents), "h.toml")
    assert str(refused.value).startswith("h.toml: ")
    assert says in str(refused.value)


def test_an_agent_listed_twice_and_bad_delivery_settings_are_refused() -> None:
    twice = {"id": "h", "card": "https://h", "credentials": "none"}
    with pytest.raises(ConfigError, match=r"harness.agents\[1\].id: 'h' is listed twice"):
        parse(table(twice, twice), "h.toml")
    for delivery, says in (
        ({"max_attempts": 0}, "harness.delivery.max_attempts: at least 1"),
        ({"retry_base_s": 0}, "harness.delivery.retry_base_s: must be more than 0"),
        ({"colour": 1}, "harness.delivery.colour: unknown field"),
    ):
        with pytest.raises(ConfigError, match=says):
            parse(table(delivery=delivery), "h.toml")
