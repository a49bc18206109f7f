"""The dashboard's files, shipped inside the package (``accord/dashboard/static``): read once,
served with an ETag, never fetched from anywhere else.

Every answer carries a Content-Security-Policy that lets the page load only its own files and
talk only to its own server (no inline script, no other origin, no framing), so task data an
agent or a participant wrote can never run as code in an operator's browser, even if it
reached the page as markup.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources

from accord.server import Request, Send, respond

TYPES = {
    ".html": b"text/html; charset=utf-8",
    ".js": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".svg": b"image/svg+xml",
}
SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: bytes
    etag: bytes


def _load() -> dict[str, Asset]:
    assets: dict[str, Asset] = {}
    root = resources.files("accord.dashboard") / "static"
    for entry in root.iterdir():
        suffix = "." + entry.name.rpartition(".")[2]
        if not entry.is_file() or suffix not in TYPES:
            continue
        body = entry.read_bytes()
        etag = b'"' + hashlib.sha256(body).hexdigest()[:20].encode() + b'"'
        assets[entry.name] = Asset(body, TYPES[suffix], etag)
    return assets


class Assets:
    def __init__(self) -> None:
        self.files = _load()

    async def serve(self, request: Request, send: Send, name: str) -> bool:
        """Answer with the file ``name``; False when there is none."""
        asset = self.files.get(name)
        if asset is None:
            return False
        # Revalidated every time (no-cache): a new accord's page is never mixed with an old
        # one's script, and an unchanged file costs a 304.
        headers = [(b"etag", asset.etag), (b"cache-control", b"no-cache"), *SECURITY_HEADERS]
        if request.headers.get("if-none-match") == asset.etag.decode():
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return True
        # (HEAD: the HTTP server sends the head alone)
        await respond(send, 200, asset.body, asset.content_type, headers)
        return True
