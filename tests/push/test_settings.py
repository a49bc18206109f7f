"""Push settings from TOML and the environment reach the dispatcher."""

from __future__ import annotations

from pathlib import Path

import pytest

from accord.app._build import build_app, push_dispatcher
from accord.app._settings import load
from accord.push._ssrf import literal_address


def test_toml_settings_reach_the_dispatcher(tmp_path: Path) -> None:
    config = tmp_path / "accord.toml"
    config.write_text(
        'push_allow_hosts = ["localhost", "127.0.0.1/32", "::1"]\n'
        "push_timeout_s = 2.5\npush_max_attempts = 3\npush_retry_base_s = 0.5\n"
    )
    settings = load(str(config), {"store": "memory://"})
    dispatcher = push_dispatcher(build_app(settings).service.engine, settings)
    assert dispatcher.settings.allow == ("localhost", "127.0.0.1/32", "::1")
    assert (dispatcher.settings.timeout_s, dispatcher.settings.max_attempts) == (2.5, 3)
    policy = dispatcher.guard.policy
    assert policy.host_admitted("localhost")
    for address in ("127.0.0.1", "::1"):
        found = literal_address(address)
        assert found is not None and policy.address_refusal(found) is None
    found = literal_address("127.0.0.2")
    assert found is not None and policy.address_refusal(found) is not None


def test_the_allow_list_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCORD_PUSH_ALLOW_HOSTS", "localhost, 10.0.0.0/8")
    monkeypatch.setenv("ACCORD_PUSH_MAX_ATTEMPTS", "5")
    settings = load(None, {"store": "memory://"})
    assert settings.push_allow_hosts == ["localhost", "10.0.0.0/8"]
    assert settings.push_max_attempts == 5
    assert load(None, {}).push_allow_hosts == ["localhost", "10.0.0.0/8"]
    monkeypatch.delenv("ACCORD_PUSH_ALLOW_HOSTS")
    assert load(None, {}).push_allow_hosts == []  # the guard's default: nothing admitted
