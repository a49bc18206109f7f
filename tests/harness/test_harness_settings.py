"""The [harness] settings table: every refusal names the file and the setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from anthropic import AsyncAnthropic
from anthropic._constants import ANTHROPIC_API_VERSION as anthropic_version
from openai import AsyncOpenAI

from accord.config import ConfigError
from accord.harness._settings import HarnessSettings, ModelFactory, parse
from accord.harness.models import AnthropicModel, OpenAIModel
from accord.harness.models._http import HttpClient, HTTPError


def test_a_minimal_table(tmp_path: Path) -> None:
    settings = parse({"model": "scripted:x.json"}, "h.toml")
    assert settings == HarnessSettings(model="scripted:x.json")
    assert settings.openai.base_url == "https://api.openai.com/v1"
    assert settings.openai.api == "chat"


def test_the_sub_task_bounds() -> None:
    settings = parse({"model": "scripted:x", "max_subtask_depth": 1, "max_subtasks": 4})
    assert (settings.bounds.max_depth, settings.bounds.max_children) == (1, 4)
    default = parse({"model": "scripted:x"}).bounds
    assert (default.max_depth, default.max_children) == (3, 16)


def test_the_push_url_is_a_base_url_of_this_server() -> None:
    assert parse({"model": "scripted:x"}).push_url == ""
    given = parse({"model": "scripted:x", "push_url": "https://accord.example/base/"})
    assert given.push_url == "https://accord.example/base"
    local = parse({"model": "scripted:x", "push_url": "http://127.0.0.1:8000"})
    assert local.push_url == "http://127.0.0.1:8000"


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({}, "h.toml: harness.model: missing"),
        ({"model": "gpt"}, "h.toml: harness.model: 'gpt' is no model"),
        ({"model": "scripted:x", "models": ["nope"]}, "h.toml: harness.models: 'nope' is no"),
        ({"model": "scripted:x", "colour": 1}, "h.toml: harness.colour: unknown field"),
        ({"model": "scripted:x", "agent_id": ""}, "h.toml: harness.agent_id: must not be empty"),
        ({"model": "scripted:x", "openai": {"api": "x"}}, "h.toml: harness.openai.api: expected"),
        (
            {"model": "scripted:x", "openai": {"base_url": "ftp://h"}},
            "h.toml: harness.openai.base_url: expected an absolute http(s) URL",
        ),
        (
            {"model": "scripted:x", "openai": {"timeout_s": 0}},
            "h.toml: harness.openai.timeout_s: must be more than 0",
        ),
        (
            {"model": "scripted:x", "system_prompt": "a", "system_prompt_file": "b"},
            "h.toml: harness.system_prompt_file: set it or system_prompt, not both",
        ),
        (
            {"model": "scripted:x", "max_subtask_depth": 33},
            "h.toml: harness.max_subtask_depth: from 0 (no sub-tasks) to 32, got 33",
        ),
        (
            {"model": "scripted:x", "max_subtasks": -1},
            "h.toml: harness.max_subtasks: from 0 (no sub-tasks) to 1000, got -1",
        ),
        ({"model": "scripted:x", "max_subtasks": "many"}, "h.toml: harness.max_subtasks: expected"),
        (
            {"model": "scripted:x", "push_url": "http://accord.example.com"},
            "h.toml: harness.push_url: the push token would travel in clear to accord.example.com",
        ),
        (
            {"model": "scripted:x", "push_url": "https://a.example/?x=1"},
            "h.toml: harness.push_url: a base URL, without a query or a fragment",
        ),
        ({"model": "scripted:x", "push_url": "a.example"}, "h.toml: harness.push_url: expected"),
    ],
)
def test_refusals_name_the_setting(table: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse(table, "h.toml")
    assert str(refused.value).startswith(says), str(refused.value)


def test_the_key_is_never_sent_in_clear_to_another_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_KEY", "sk-secret")
    remote = {"base_url": "http://models.example.com/v1", "api_key_env": "MY_KEY"}
    with pytest.raises(ConfigError) as refused:
        parse({"model": "openai:m", "openai": remote}, "h.toml")
    message = str(refused.value)
    assert message.startswith("h.toml: harness.openai.base_url: refusing to send the key")
    assert "sk-secret" not in message
    # https, or a loopback server, or no key at all: fine.
    for base_url in ("https://models.example.com/v1", "http://127.0.0.1:8000/v1"):
        parse({"model": "openai:m", "openai": {**remote, "base_url": base_url}}, "h.toml")
    monkeypatch.delenv("MY_KEY")
    parse({"model": "openai:m", "openai": remote}, "h.toml")


def test_openai_models_share_one_client_of_the_endpoint() -> None:
    settings = parse(
        {"model": "openai:a", "models": ["openai:b"], "openai": {"api": "responses"}}, ""
    )
    factory = ModelFactory(settings)
    first, second = factory("openai:a"), factory("openai:b")
    assert isinstance(first, OpenAIModel) and isinstance(second, OpenAIModel)
    assert first.client is second.client
    assert first.api == "responses"
    assert isinstance(first.client, HttpClient)  # accord's own, by default
    assert first.client.base_url == "https://api.openai.com/v1"
    assert first.client.headers["Authorization"].startswith("Bearer ")


async def test_the_client_setting_chooses_the_package_and_the_factory_closes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    for kind, package in (("openai", AsyncOpenAI), ("anthropic", AsyncAnthropic)):
        settings = parse({"model": f"{kind}:a", kind: {"client": "package"}})
        factory = ModelFactory(settings)
        chosen = factory(f"{kind}:a")
        assert isinstance(chosen, OpenAIModel | AnthropicModel)
        assert isinstance(chosen.client, package)
        assert chosen.client.max_retries == 0
        await factory.aclose()
        assert chosen.client.is_closed()
        accords = ModelFactory(parse({"model": f"{kind}:a"}))
        ours = accords(f"{kind}:a")
        assert isinstance(ours, OpenAIModel | AnthropicModel)
        assert isinstance(ours.client, HttpClient)
        await accords.aclose()
        with pytest.raises(HTTPError, match="closed"):
            async with ours.client.stream("/x", b"{}"):
                pass


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_client_setting_is_accord_or_package(kind: str) -> None:
    assert getattr(parse({"model": f"{kind}:a"}), kind).client == "accord"
    refused = rf"h.toml: harness\.{kind}\.client: expected 'accord' or"
    with pytest.raises(ConfigError, match=refused):
        parse({"model": f"{kind}:a", kind: {"client": "httpx"}}, "h.toml")


def test_a_proxy_accords_client_cannot_use_falls_back_to_the_package(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.example:3128")
    chosen = ModelFactory(parse({"model": "openai:a"}))("openai:a")
    assert isinstance(chosen, OpenAIModel) and isinstance(chosen.client, AsyncOpenAI)
    assert "is not an http:// proxy" in caplog.text and "openai package" in caplog.text


def test_the_anthropic_endpoint_and_its_defaults() -> None:
    default = parse({"model": "anthropic:claude-sonnet-4-5"}, "h.toml").anthropic
    assert (default.base_url, default.api_key_env) == (
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
    )
    assert (default.max_tokens, default.thinking, default.attempts) == (8192, 0, 3)
    table = {"base_url": "https://gw.example.com/anthropic/", "max_tokens": 4096, "thinking": 2048}
    given = parse({"model": "anthropic:m", "anthropic": table}, "h.toml").anthropic
    assert given.base_url == "https://gw.example.com/anthropic"
    assert (given.max_tokens, given.thinking) == (4096, 2048)
    adaptive = parse({"model": "anthropic:m", "anthropic": {"thinking": "adaptive"}}).anthropic
    assert adaptive.thinking == "adaptive"


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"colour": 1}, "h.toml: harness.anthropic.colour: unknown field"),
        ({"api": "chat"}, "h.toml: harness.anthropic.api: unknown field"),
        (
            {"base_url": "https://api.anthropic.com/v1"},
            "h.toml: harness.anthropic.base_url: the server's root, without /v1",
        ),
        ({"max_tokens": 0}, "h.toml: harness.anthropic.max_tokens: at least 1"),
        ({"attempts": 0}, "h.toml: harness.anthropic.attempts: at least 1"),
        ({"thinking": 512}, 'h.toml: harness.anthropic.thinking: 0 (off), "adaptive", or a budget'),
        (
            {"thinking": 8192},
            'h.toml: harness.anthropic.thinking: 0 (off), "adaptive", or a budget from 1024 to '
            "less than max_tokens (8192), got 8192",
        ),
        ({"thinking": "lots"}, "h.toml: harness.anthropic.thinking: expected 0 (off)"),
        ({"thinking": True}, "h.toml: harness.anthropic.thinking: expected 0 (off)"),
    ],
)
def test_anthropic_refusals_name_the_setting(table: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse({"model": "anthropic:m", "anthropic": table}, "h.toml")
    assert str(refused.value).startswith(says), str(refused.value)


def test_the_anthropic_key_is_never_sent_in_clear_to_another_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    remote = {"base_url": "http://claude.example.com"}
    with pytest.raises(ConfigError) as refused:
        parse({"model": "anthropic:m", "anthropic": remote}, "h.toml")
    message = str(refused.value)
    assert message.startswith("h.toml: harness.anthropic.base_url: refusing to send the key")
    assert "sk-ant-secret" not in message
    parse({"model": "anthropic:m", "anthropic": {"base_url": "http://localhost:8080"}}, "h.toml")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    parse({"model": "anthropic:m", "anthropic": remote}, "h.toml")


def test_anthropic_models_share_one_client_of_the_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLAUDE_KEY", "sk-ant-1")
    table = {"api_key_env": "CLAUDE_KEY", "attempts": 5, "max_tokens": 4096, "thinking": 1024}
    settings = parse({"model": "anthropic:a", "models": ["anthropic:b"], "anthropic": table})
    factory = ModelFactory(settings)
    first, second = factory("anthropic:a"), factory("anthropic:b")
    assert isinstance(first, AnthropicModel) and isinstance(second, AnthropicModel)
    assert first.client is second.client
    assert (first.name, first.label) == ("a", "anthropic:a")
    assert (first.max_tokens, first.thinking, first.retry.attempts) == (4096, 1024, 5)
    assert isinstance(first.client, HttpClient)  # accord's own, by default
    assert first.client.headers["x-api-key"] == "sk-ant-1"
    assert first.client.headers["anthropic-version"] == anthropic_version
    assert first.client.base_url == "https://api.anthropic.com"


def test_prompt_cache_key_can_be_left_out_for_servers_that_refuse_it() -> None:
    assert parse({"model": "openai:a"}).openai.prompt_cache_key is True
    gemini = {"base_url": "https://generativelanguage.googleapis.com/v1beta/openai"}
    settings = parse({"model": "openai:a", "openai": {**gemini, "prompt_cache_key": False}})
    assert ModelFactory(settings)("openai:a").cache_key is False  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"harness\.openai\.prompt_cache_key: expected"):
        parse({"model": "openai:a", "openai": {"prompt_cache_key": "sometimes"}})
