"""Settings: defaults, then the TOML file, then ACCORD_* variables, then flags."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from accord.server.settings import Principal, load


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
        tmp_path, 'port = 7000\nstore = "memory://"\nname = "from toml"\nmax-parts = 4\n'
    )
    assert load(config).port == 7000
    monkeypatch.setenv("ACCORD_PORT", "7001")
    monkeypatch.setenv("ACCORD_NAME", "from env")
    settings = load(config, {"port": 7002, "store": None})
    assert settings.port == 7002  # the flag
    assert settings.name == "from env"  # the environment over the file
    assert settings.store == "memory://"  # an unset flag leaves the file's value
    assert settings.max_parts == 4  # "-" and "_" are the same in keys


def test_values_from_the_environment_are_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCORD_STREAMING", "off")
    monkeypatch.setenv("ACCORD_STRICT_INPUT_MODES", "yes")
    monkeypatch.setenv("ACCORD_INPUT_MODES", "text/plain, image/png")
    monkeypatch.setenv("ACCORD_HEARTBEAT_S", "2.5")
    monkeypatch.setenv("ACCORD_TASKS_PER_TENANT", "none")
    monkeypatch.setenv("ACCORD_PUSH_ALLOW_HOSTS", "localhost,127.0.0.1")
    settings = load()
    assert settings.streaming is False
    assert settings.strict_input_modes is True
    assert settings.input_modes == ["text/plain", "image/png"]
    assert settings.heartbeat_s == 2.5
    assert settings.tasks_per_tenant is None
    assert settings.push_allow_hosts == ["localhost", "127.0.0.1"]
    monkeypatch.setenv("ACCORD_STREAMING", "maybe")
    with pytest.raises(ValueError, match="streaming"):
        load()


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
    with pytest.raises(ValueError, match="max_connections"):
        load()
