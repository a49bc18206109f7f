"""Settings: defaults, then the TOML file, then ACCORD_* variables, then flags."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from accord.app._settings import Principal, load


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("ACCORD_"):
            monkeypatch.delenv(name)


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "accord.toml"
    path.write_text(text)
    return str(path)


def test_each_source_overrides_the_one_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(
        tmp_path, 'port = 7000\nstore = "memory://"\nagent = "conformance"\nmax-parts = 4\n'
    )
    assert load(config).port == 7000
    monkeypatch.setenv("ACCORD_PORT", "7001")
    monkeypatch.setenv("ACCORD_AGENT", "echo")
    settings = load(config, {"port": 7002, "store": None})
    assert settings.port == 7002  # the flag
    assert settings.agent == "echo"  # the environment over the file
    assert settings.store == "memory://"  # an unset flag leaves the file's value
    assert settings.max_parts == 4  # "-" and "_" are the same in keys


def test_values_from_the_environment_are_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCORD_STREAMING", "off")
    monkeypatch.setenv("ACCORD_STRICT_INPUT_MODES", "yes")
    monkeypatch.setenv("ACCORD_HEARTBEAT_S", "2.5")
    monkeypatch.setenv("ACCORD_TASKS_PER_TENANT", "none")
    monkeypatch.setenv("ACCORD_PUSH_ALLOW_HOSTS", "localhost,127.0.0.1")
    settings = load()
    assert settings.streaming is False
    assert settings.strict_input_modes is True
    assert settings.heartbeat_s == 2.5
    assert settings.tasks_per_tenant is None
    assert settings.push_allow_hosts == ["localhost", "127.0.0.1"]
    monkeypatch.setenv("ACCORD_STREAMING", "maybe")
    with pytest.raises(ValueError) as refused:
        load()
    assert str(refused.value) == "ACCORD_STREAMING: expected true or false, got 'maybe'"


def test_the_config_file_may_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCORD_CONFIG", write(tmp_path, "[accord]\nport = 7100\n"))
    assert load().port == 7100


def test_credentials_come_from_the_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(
        tmp_path,
        '[bearer_tokens]\n"tok-a" = { identity = "alice", tenant = "acme" }\n"tok-b" = "bob"\n',
    )
    monkeypatch.setenv("ACCORD_BEARER_TOKENS", "ignored")
    settings = load(config)
    assert settings.bearer_tokens == {
        "tok-a": Principal(identity="alice", tenant="acme"),
        "tok-b": Principal(identity="bob"),
    }


def test_an_unknown_key_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown setting 'prot'"):
        load(write(tmp_path, "prot = 1\n"))


@pytest.mark.parametrize(
    ("toml", "error"),
    [
        ('port = "abc"\n', "port: expected an integer, got 'abc'"),
        ("port = 80000\n", "port: expected a port number from 0 to 65535, got 80000"),
        ("grpc-port = 0\n", "grpc-port: expected a port number from 1 to 65535, got 0"),
        ("streaming = 1\n", "streaming: expected true or false, got 1"),
        ("heartbeat_s = true\n", "heartbeat_s: expected a number, got true"),
        ('http = "nginx"\n', "http: expected one of accord, uvicorn, got 'nginx'"),
        ('log_level = "verbose"\n', "log_level: expected one of debug, info, warning, error"),
        ('public_url = "agents.example.com"\n', "public_url: expected an absolute http(s) URL"),
        ("push_allow_hosts = [1]\n", "push_allow_hosts: expected a list of strings, got a list"),
        ('[bearer_tokens]\n"s3cret" = { tenant = "acme" }\n', "bearer_tokens.<secret>.identity"),
        ('name = "old"\n', "name: now set in the [card] table, as card.name"),
        ("port = \n", "not valid TOML: "),
    ],
)
def test_a_refused_value_names_the_file_and_the_setting(
    toml: str, error: str, tmp_path: Path
) -> None:
    path = write(tmp_path, toml)
    with pytest.raises(ValueError) as refused:
        load(path)
    assert str(refused.value).startswith(f"{path}: {error}")
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    ("variable", "value", "error"),
    [
        ("ACCORD_PORT", "x", "ACCORD_PORT: expected an integer, got 'x'"),
        ("ACCORD_PORT", "65536", "ACCORD_PORT: expected a port number from 0 to 65535, got 65536"),
        ("ACCORD_GRPC_PORT", "0", "ACCORD_GRPC_PORT: expected a port number from 1 to 65535"),
        ("ACCORD_NAME", "x", "ACCORD_NAME: now set in the settings file's [card] table"),
    ],
)
def test_a_refused_environment_variable_is_named(
    variable: str, value: str, error: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError) as refused:
        load()
    assert str(refused.value).startswith(error)


def test_a_refused_flag_is_named() -> None:
    with pytest.raises(ValueError) as refused:
        load(None, {"port": 80000})
    assert str(refused.value) == "--port: expected a port number from 0 to 65535, got 80000"


def test_an_unset_grpc_port_turns_grpc_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCORD_GRPC_PORT", "none")
    assert load().grpc_port is None


def test_an_ipv6_host_is_bracketed_in_the_urls() -> None:
    settings = load(None, {"host": "[::1]", "grpc_port": 50051})
    assert settings.host == "::1"  # what the socket binds
    assert settings.advertised_url == "http://[::1]:9999"
    assert settings.advertised_grpc_url == "[::1]:50051"
    assert load(None, {"host": "::"}).advertised_url == "http://[::1]:9999"
    public = load(None, {"public_url": "http://[2001:db8::1]:8080", "grpc_port": 50051})
    assert public.advertised_grpc_url == "[2001:db8::1]:50051"


def test_slow_client_and_connection_limits_are_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    defaults = load()
    assert (defaults.body_timeout_s, defaults.body_min_rate, defaults.max_connections) == (
        20.0,
        500,
        1024,
    )
    config = write(tmp_path, "body-timeout-s = 5\nbody_min_rate = 0\n")
    monkeypatch.setenv("ACCORD_MAX_CONNECTIONS", "64")
    settings = load(config)
    assert (settings.body_timeout_s, settings.body_min_rate, settings.max_connections) == (
        5,
        0,
        64,
    )
    monkeypatch.setenv("ACCORD_MAX_CONNECTIONS", "-1")
    with pytest.raises(ValueError) as refused:
        load()
    assert str(refused.value) == "ACCORD_MAX_CONNECTIONS: expected 0 (off) or more, got -1"


def test_store_outage_s_is_a_setting_of_0_or_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load().store_outage_s == 60.0
    assert load(write(tmp_path, "store-outage-s = 0\n")).store_outage_s == 0
    monkeypatch.setenv("ACCORD_STORE_OUTAGE_S", "-1")
    with pytest.raises(ValueError) as refused:
        load()
    assert str(refused.value) == "ACCORD_STORE_OUTAGE_S: expected 0 (off) or more, got -1.0"
