"""The agent card describes a real agent: name, description, version, provider, links, skills
and media types from the settings' ``[card]`` table and from the agent module's ``card``
(the settings win); every field is checked, and the official a2a-sdk reads the result."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest
from serve_process import serve_fails, serving
from tests.processes import free_port

from accord import __version__
from accord.app._settings import Settings, load
from accord.service._card import CardSettings, build_card

CARD_TOML = """
[card]
name = "Weather"
version = "2.3.1"
icon_url = "https://weather.example.com/icon.png"
default_input_modes = ["text/plain"]
default_output_modes = ["text/plain", "application/json"]

[card.provider]
organization = "Example Weather Co."
url = "https://weather.example.com"

[[card.skills]]
id = "forecast"
name = "Forecast"
description = "The weather for the next days."
tags = ["weather", "forecast"]
examples = ["What's the weather in Paris tomorrow?"]
input_modes = ["text/plain"]
output_modes = ["application/json"]

[[card.skills]]
id = "alerts"
name = "Alerts"
description = "Storm warnings."
tags = ["weather"]
"""

WEATHER_MODULE = """
card = {
    "name": "weather (module)",
    "description": "Forecasts for any city.",
    "version": "0.9.0",
    "documentationUrl": "https://weather.example.com/docs",
    "skills": [{"id": "module-skill", "name": "M", "description": "replaced by the file's"}],
}


async def agent(ctx, task):
    await task.start_working()
    await task.complete("sunny")
"""


def write_weather(directory: Path) -> None:
    (directory / "accord.toml").write_text(CARD_TOML)
    (directory / "weather.py").write_text(WEATHER_MODULE)


@pytest.mark.processes
async def test_the_card_describes_the_agent_and_the_sdk_reads_it(tmp_path: Path) -> None:
    write_weather(tmp_path)
    args = ("--config", "accord.toml", "--agent", "weather", "--store", "memory://")
    with serving(*args, cwd=tmp_path) as served:
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, served.url).get_agent_card()
        client = await create_client(served.url, client_config=ClientConfig(streaming=False))
        async with client:
            message = Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="Paris?")])
            [answer] = [r async for r in client.send_message(SendMessageRequest(message=message))]
    # The file's [card] over the module's card:
    assert card.name == "Weather"
    assert card.version == "2.3.1"
    assert card.description == "Forecasts for any city."
    assert card.documentation_url == "https://weather.example.com/docs"
    assert card.icon_url == "https://weather.example.com/icon.png"
    assert card.provider.organization == "Example Weather Co."
    assert card.provider.url == "https://weather.example.com"
    assert list(card.default_input_modes) == ["text/plain"]
    assert list(card.default_output_modes) == ["text/plain", "application/json"]
    assert [skill.id for skill in card.skills] == ["forecast", "alerts"]
    forecast = card.skills[0]
    assert forecast.name == "Forecast"
    assert forecast.description == "The weather for the next days."
    assert list(forecast.tags) == ["weather", "forecast"]
    assert list(forecast.examples) == ["What's the weather in Paris tomorrow?"]
    assert list(forecast.input_modes) == ["text/plain"]
    assert list(forecast.output_modes) == ["application/json"]
    assert answer.task.status.message.parts[0].text == "sunny"


@pytest.mark.processes
def test_the_grpc_url_follows_the_public_url_not_the_bind_address(tmp_path: Path) -> None:
    (tmp_path / "accord.toml").write_text('[bearer_tokens]\n"t0ken" = "ops"\n')
    grpc_port = free_port()
    with serving(
        "--host", "0.0.0.0", "--grpc-port", str(grpc_port), "--config", "accord.toml",
        "--public-url", "https://agents.example.com", "--store", "memory://",
        cwd=tmp_path,
    ) as served:  # fmt: skip
        port = served.url.rsplit(":", 1)[1]
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/.well-known/agent-card.json", timeout=10
        ) as response:
            card = json.loads(response.read())
    urls = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
    assert urls["JSONRPC"] == "https://agents.example.com"
    assert urls["GRPC"] == f"agents.example.com:{grpc_port}"
    assert card["version"] == __version__  # no version given: accord's, never 0.0.0


def test_the_card_version_is_the_agents_own_else_accords() -> None:
    assert build_card(CardSettings()).version == __version__ != "0.0.0"
    assert build_card(CardSettings(version="2.3.1")).version == "2.3.1"


def test_grpc_public_url_is_what_the_card_says() -> None:
    settings = Settings(grpc_port=50051, grpc_public_url="grpcs://grpc.example.com:443")
    assert settings.advertised_grpc_url == "grpcs://grpc.example.com:443"
    assert Settings(host="0.0.0.0", grpc_port=50051).advertised_grpc_url == "127.0.0.1:50051"
    assert Settings(grpc_port=None).advertised_grpc_url is None


def test_the_card_table_is_read_from_the_settings_file(tmp_path: Path) -> None:
    (tmp_path / "accord.toml").write_text(CARD_TOML)
    card = load(str(tmp_path / "accord.toml")).card
    assert card.name == "Weather"
    assert card.description is None  # unset: the module's, or the default
    assert card.provider is not None and card.provider.organization == "Example Weather Co."
    assert card.skills is not None and [skill.tags for skill in card.skills] == [
        ["weather", "forecast"],
        ["weather"],
    ]


@pytest.mark.parametrize(
    ("toml", "error"),
    [
        ('[card]\nname = 3\n', "card.name: expected a string, got 3"),
        ('[card]\nname = ""\n', "card.name: must not be empty"),
        ('[card]\nversoin = "1"\n', "card.versoin: unknown field (known fields: name, "),
        ('[card]\nicon_url = "icon.png"\n', "card.icon_url: expected an absolute http(s) URL"),
        ('[card]\ndefault_input_modes = "text/plain"\n',
         "card.default_input_modes: expected a list of strings, got 'text/plain'"),
        ('[card]\ndefault_output_modes = ["text"]\n',
         "card.default_output_modes[0]: expected a media type like 'text/plain', got 'text'"),
        ('[card.provider]\norganization = "Acme"\n', "card.provider.url: missing"),
        ('[card.provider]\norganization = "Acme"\nurl = "ftp://acme"\n',
         "card.provider.url: expected an absolute http(s) URL, got 'ftp://acme'"),
        ('[[card.skills]]\nname = "A"\ndescription = "a"\n', "card.skills[0].id: missing"),
        ('[[card.skills]]\nid = "a"\nname = "A"\ndescription = "a"\ntags = [1]\n',
         "card.skills[0].tags: expected a list of strings, got a list"),
        ('[[card.skills]]\nid = "a"\nname = "A"\ndescription = "a"\n'
         '[[card.skills]]\nid = "a"\nname = "B"\ndescription = "b"\n',
         "card.skills[1].id: 'a' is used by another skill"),
        ('[[card.skills]]\nid = "a"\nname = "A"\ndescription = "a"\nexample = ["x"]\n',
         "card.skills[0].example: unknown field"),
        ("[card]\nskills = 3\n", "card.skills: expected a list of skill tables, got 3"),
        ("card = 3\n", "card: expected a table, got 3"),
    ],
)  # fmt: skip
def test_bad_card_settings_are_refused_with_the_field_named(
    toml: str, error: str, tmp_path: Path
) -> None:
    path = tmp_path / "accord.toml"
    path.write_text(toml)
    with pytest.raises(ValueError) as refused:
        load(str(path))
    assert str(refused.value).startswith(f"{path}: {error}")


@pytest.mark.processes
def test_a_bad_card_is_refused_at_start(tmp_path: Path) -> None:
    (tmp_path / "accord.toml").write_text('[[card.skills]]\nid = "a"\nname = "A"\n')
    ended = serve_fails("--config", "accord.toml", "--store", "memory://", cwd=tmp_path)
    assert ended.status == 2
    assert ended.lines == [
        "accord: accord.toml: card.skills[0].description: missing (every skill has an id, a "
        "name and a description)"
    ]


@pytest.mark.processes
def test_a_bad_module_card_is_refused_at_start(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(
        'card = {"skills": [{"id": "x", "name": "X", "description": "x", "tags": "t"}]}\n'
        "async def agent(ctx, task):\n    await task.complete()\n"
    )
    ended = serve_fails("--agent", "mine", "--port", "0", "--store", "memory://", cwd=tmp_path)
    assert ended.status == 2
    assert ended.lines == [
        "accord: module mine: card.skills[0].tags: expected a list of strings, got 't'"
    ]
