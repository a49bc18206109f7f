"""[identity] and [contracts]: what they configure, and errors naming the file and setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from accord.app._settings import load
from accord.config import ConfigError
from accord.signing._keys import generate_private_pem


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "accord.toml"
    path.write_text(text)
    return str(path)


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "a.key"
    path.write_bytes(generate_private_pem())
    return path


def test_one_key(tmp_path: Path, key_file: Path) -> None:
    settings = load(write(tmp_path, f'[identity]\nagent_id = "agent:a"\nkey_file = "{key_file}"\n'))
    assert settings.identity.agent_id == "agent:a"
    [key] = list(settings.identity.keys)
    assert key.private is not None and key.not_before_ms is None


def test_keys_with_windows(tmp_path: Path, key_file: Path) -> None:
    other = tmp_path / "b.key"
    other.write_bytes(generate_private_pem())
    settings = load(
        write(
            tmp_path,
            f"""[identity]
agent_id = "agent:a"
[[identity.keys]]
file = "{key_file}"
not_after = "2026-01-01T00:00:00Z"
[[identity.keys]]
file = "{other}"
not_before = 2026-01-01T00:00:00Z
""",
        )
    )
    first, second = settings.identity.keys
    assert first.not_after_ms == second.not_before_ms == 1_767_225_600_000
    assert settings.identity.keys.signing_key(1_767_225_600_000) is second


def test_contract_settings_and_peers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("B_KEY", "s3cret-of-b-0123")
    settings = load(
        write(
            tmp_path,
            """[contracts]
completion_window_s = 60
[contracts.peers."agent:b"]
url = "https://b.example/"
api_key_env = "B_KEY"
""",
        )
    )
    peer = settings.contracts.peers["agent:b"]
    assert (peer.url, peer.api_key, peer.token) == ("https://b.example", "s3cret-of-b-0123", None)
    assert "s3cret" not in repr(settings.contracts)
    assert settings.contracts.completion_window_s == 60
    # Unsigned acceptances: refused from a peer that publishes keys, unless set otherwise.
    assert settings.contracts.require_signed_acceptances is None
    assert peer.require_signed_acceptances is None
    assert settings.contracts.signed_acceptances_required("agent:b", publishes_keys=True)
    assert not settings.contracts.signed_acceptances_required("agent:b", publishes_keys=False)


def test_require_signed_acceptances(tmp_path: Path) -> None:
    settings = load(
        write(
            tmp_path,
            """[contracts]
require_signed_acceptances = true
[contracts.peers."agent:b"]
url = "https://b.example"
require_signed_acceptances = false
[contracts.peers."agent:c"]
url = "https://c.example"
""",
        )
    )
    contracts = settings.contracts
    assert not contracts.signed_acceptances_required("agent:b", publishes_keys=True)
    assert contracts.signed_acceptances_required("agent:c", publishes_keys=False)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[identity]\nkey_file = "x"\n', "identity.agent_id: missing"),
        ('[identity]\nagent_id = ""\n', "identity.agent_id: must not be empty"),
        ('[identity]\nagent_id = "a"\nkey_file = "/nonexistent.key"\n',
         "identity.key_file: cannot read /nonexistent.key"),
        ('[identity]\nagent_id = "a"\nsurprise = 1\n', "identity.surprise: unknown field"),
        ('[identity]\nagent_id = "a"\nkeys = "k"\n', "identity.keys: expected a list of tables"),
        ('[identity]\nagent_id = "a"\n[[identity.keys]]\nnot_before = "2026-01-01T00:00:00Z"\n',
         "identity.keys[0].file: missing"),
        ('[contracts]\nsweep_interval_s = 0\n', "contracts.sweep_interval_s: must be more than 0"),
        ('[contracts]\nlifetime_s = "long"\n', "contracts.lifetime_s: expected a number"),
        ('[contracts]\nrequire_signed_acceptances = "maybe"\n',
         "contracts.require_signed_acceptances: expected true or false"),
        ('[contracts.peers."agent:b"]\nurl = "https://b"\nrequire_signed_acceptances = 1\n',
         'contracts.peers."agent:b".require_signed_acceptances: expected true or false'),
        ('[contracts.peers."agent:b"]\napi_key = "k"\n', 'contracts.peers."agent:b".url: missing'),
        ('[contracts.peers."agent:b"]\nurl = "ftp://b"\n',
         'contracts.peers."agent:b".url: expected an absolute http(s) URL'),
        ('[contracts.peers."agent:b"]\nurl = "https://b"\napi_key_env = "ACCORD_NOT_SET_EVER"\n',
         "environment variable ACCORD_NOT_SET_EVER is not set"),
        ('[contracts.peers."agent:b"]\nurl = "https://b"\napi_key = "a"\ntoken = "b"\n',
         "give api_key or token, not both"),
    ],
)  # fmt: skip
def test_errors_name_the_file_and_the_setting(tmp_path: Path, table: str, message: str) -> None:
    path = write(tmp_path, table)
    with pytest.raises(ConfigError) as refused:
        load(path)
    assert str(refused.value).startswith(f"{path}: ")
    assert message in str(refused.value)


def test_a_key_that_is_not_ed25519_is_refused(tmp_path: Path, key_file: Path) -> None:
    rsa_file = tmp_path / "rsa.key"
    rsa_file.write_bytes(
        rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    for path, expected in ((rsa_file, "not an Ed25519 key"), (tmp_path / "accord.toml", "PEM")):
        config = write(tmp_path, f'[identity]\nagent_id = "a"\nkey_file = "{path}"\n')
        with pytest.raises(ConfigError, match=expected) as refused:
            load(config)
        assert "accord keys generate FILE" in str(refused.value)
    both = write(
        tmp_path,
        f'[identity]\nagent_id = "a"\nkey_file = "{key_file}"\n[[identity.keys]]\nfile = "x"\n',
    )
    with pytest.raises(ConfigError, match="set it or key_file, not both"):
        load(both)


def test_windows_must_be_in_order(tmp_path: Path, key_file: Path) -> None:
    config = write(
        tmp_path,
        f"""[identity]
agent_id = "a"
[[identity.keys]]
file = "{key_file}"
not_before = "2026-01-01T00:00:00Z"
not_after = "2025-01-01T00:00:00Z"
""",
    )
    with pytest.raises(ConfigError, match=r"keys\[0\].not_after: must be later than not_before"):
        load(config)
    config = write(
        tmp_path, f'[identity]\nagent_id = "a"\n[[identity.keys]]\nfile = "{key_file}"\n'
        'not_after = "next year"\n',
    )  # fmt: skip
    with pytest.raises(ConfigError, match="expected an RFC 3339 time"):
        load(config)


def test_the_tables_come_from_the_file_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCORD_IDENTITY", "agent:a")
    assert load().identity is None
