"""``accord serve`` without authentication serves loopback only; principals count as
authentication."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from accord.app._settings import load
from accord.cli._main import main


def test_serve_refuses_a_public_address_without_authentication() -> None:
    result = CliRunner().invoke(main, ["serve", "--host", "0.0.0.0", "--store", "memory://"])
    assert result.exit_code == 2
    assert "refusing to serve without authentication" in result.output


def test_principals_or_jwt_count_as_authentication(tmp_path: Path) -> None:
    config = tmp_path / "accord.toml"
    config.write_text(
        '[[principals]]\nidentity = "w"\nactors = ["a2a.tasks.Agent"]\n'
        'api_key = "worker-key-0123456789abcdef"\n'
    )
    assert load(str(config)).auth_configured
    assert not load(None).auth_configured
    jwt_only = tmp_path / "jwt.toml"
    jwt_only.write_text('[jwt]\nsecret = "a-test-secret-that-is-long-enough-0123456789"\n')
    assert load(str(jwt_only)).auth_configured
