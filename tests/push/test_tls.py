"""https webhooks: the connection goes to the checked address, while TLS sees the URL's host
name (SNI) and the certificate is checked against that name, not the IP."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from accord.push import AddressPolicy, DeliveryError, Guard, Sender
from accord.wire._model import TaskPushNotificationConfig

from .receiver import Receiver


def self_signed(tmp_path: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def to_loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


@pytest.mark.parametrize(("certified", "ok"), [("hooks.test", True), ("other.test", False)])
async def test_https_delivery_checks_the_certificate_against_the_url_host(
    tmp_path: Path, certified: str, ok: bool
) -> None:
    cert, key = self_signed(tmp_path, certified)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    names: list[str | None] = []
    server_tls.sni_callback = lambda sock, name, context: names.append(name)  # type: ignore[assignment,func-returns-value]
    trust = ssl.create_default_context(cafile=str(cert))

    receiver = await Receiver().start(tls=server_tls)
    sender = Sender(Guard(AddressPolicy(["hooks.test"]), to_loopback), timeout_s=5, verify=trust)
    config = TaskPushNotificationConfig(url=f"https://hooks.test:{receiver.port}/hook")
    try:
        if ok:
            await sender.send(config, "task-1:1", b"{}")
            assert receiver.received[0].headers["host"] == f"hooks.test:{receiver.port}"
            assert receiver.received[0].path == "/hook"
        else:
            with pytest.raises(DeliveryError, match=r"(?i)certificate verify failed"):
                await sender.send(config, "task-1:1", b"{}")
            assert receiver.received == []
        assert names and names[0] == "hooks.test"  # SNI is the name, not 127.0.0.1
    finally:
        await sender.aclose()
        await receiver.close()
