"""A file in a message is stored, rewritten to a URL of this server, and served byte for
byte (ranges too) to the task's members only; everyone else gets the unknown answer; the
limits are refused with the protocol's error; on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.marks import POSTGRES
from tests.media.media_kit import (
    ALICE,
    BOB,
    EVE,
    PNG,
    file_message,
    file_url,
    harness_server,
    send,
    store_url,
)

from accord.media import MEDIA_KEY, MEDIA_URI, MediaSettings

BACKENDS = ("sqlite", POSTGRES)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_file_is_served_to_members_only(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    data = os.urandom(700_000)  # several stored chunks
    async with harness_server(store_url(request, backend, tmp_path)) as http:
        task = await send(http, file_message(data, "report.bin", "application/pdf"), ALICE)
        url = file_url(task)
        assert url.startswith("http://localhost/media/")
        [part] = [p for p in task["history"][0]["parts"] if "url" in p]
        assert "raw" not in part and part["filename"] == "report.bin"
        assert part["metadata"][MEDIA_KEY]["size"] == len(data)
        path = url.removeprefix("http://localhost")

        whole = await http.get(path, headers=ALICE)
        assert whole.status_code == 200
        assert whole.content == data
        assert whole.headers["content-type"] == "application/pdf"
        assert whole.headers["content-disposition"].startswith('attachment; filename="report.bin"')
        assert whole.headers["x-content-type-options"] == "nosniff"
        assert whole.headers["accept-ranges"] == "bytes"

        span = await http.get(path, headers={**ALICE, "Range": "bytes=262100-262200"})
        assert span.status_code == 206
        assert span.content == data[262100:262201]
        assert span.headers["content-range"] == f"bytes 262100-262200/{len(data)}"
        tail = await http.get(path, headers={**ALICE, "Range": "bytes=-10"})
        assert tail.status_code == 206 and tail.content == data[-10:]
        beyond = await http.get(path, headers={**ALICE, "Range": f"bytes={len(data)}-"})
        assert beyond.status_code == 416

        # bob (same tenant, not a participant), eve (another tenant), eve naming acme, an
        # unknown id, no credentials: the first four get one answer, byte for byte.
        unknown = await http.get("/media/AAAAAAAAAAAAAAAAAAAAAAAA", headers=ALICE)
        assert unknown.status_code == 404
        for headers, target in (
            (BOB, path),
            (EVE, path),
            (EVE, path.split("?")[0] + "?tenant=acme"),
        ):
            refused = await http.get(target, headers=headers)
            assert (refused.status_code, refused.content) == (404, unknown.content)
            assert str(len(data)) not in refused.text
        assert (await http.get(path)).status_code == 401


@pytest.mark.parametrize("backend", BACKENDS)
async def test_uploads_and_the_limits(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    media = MediaSettings(max_file_bytes=1000, max_message_bytes=1500)
    async with harness_server(store_url(request, backend, tmp_path), media=media) as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
        [ext] = [e for e in card["capabilities"]["extensions"] if e["uri"] == MEDIA_URI]
        assert ext["params"]["maxFileBytes"] == 1000
        assert ext["params"]["maxMessageBytes"] == 1500
        assert ext["params"]["uploadUrl"] == "http://localhost/media"
        assert "image/png" in ext["params"]["accepted"]

        # Over the file limit, declared: refused before the body is read.
        big = await http.post(
            "/media?filename=big.txt",
            content=b"x" * 1001,
            headers={**ALICE, "Content-Type": "text/plain"},
        )
        assert big.status_code == 413
        assert big.json()["error"]["details"][0]["reason"] == "PAYLOAD_TOO_LARGE"
        # Over the file limit inside a message, and over the message's limit.
        over = file_message(b"y" * 1001, "a.txt", "text/plain")
        answer = await http.post("/message:send", json={"message": over}, headers=ALICE)
        assert answer.status_code == 413
        two = file_message(b"y" * 800, "a.txt", "text/plain")
        two["parts"].append(dict(two["parts"][1]))
        answer = await http.post("/message:send", json={"message": two}, headers=ALICE)
        assert answer.status_code == 413
        # A type the settings do not take.
        odd = file_message(b"MZ", "a.exe", "application/x-msdownload")
        answer = await http.post("/message:send", json={"message": odd}, headers=ALICE)
        assert answer.status_code == 400
        assert answer.json()["error"]["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"

        # An upload, then a message naming it: the uploader alone reads it until then.
        uploaded = await http.post(
            "/media?filename=dot.png", content=PNG, headers={**ALICE, "Content-Type": "image/png"}
        )
        assert uploaded.status_code == 201, uploaded.text
        url = uploaded.json()["url"]
        path = url.removeprefix("http://localhost")
        assert (await http.get(path, headers=ALICE)).content == PNG
        assert (await http.get(path, headers=BOB)).status_code == 404
        # bob cannot put alice's upload in his message
        named = {
            "messageId": "m-bob",
            "role": "ROLE_USER",
            "parts": [{"url": url, "mediaType": "image/png"}],
        }
        answer = await http.post("/message:send", json={"message": named}, headers=BOB)
        assert answer.status_code == 400
        named["messageId"] = "m-alice"
        task = await send(http, named, ALICE)
        assert file_url(task) == url
        shown = await http.get(path, headers=ALICE)
        assert shown.content == PNG
        assert shown.headers["content-disposition"].startswith('inline; filename="dot.png"')
        assert (await http.get(path, headers=BOB)).status_code == 404
        # Named again in the same task: taken; in another task: refused.
        again = {**named, "messageId": "m-again", "taskId": task["id"]}
        answer = await http.post("/message:send", json={"message": again}, headers=ALICE)
        assert answer.status_code == 200, answer.text
        elsewhere = {**named, "messageId": "m-elsewhere"}
        answer = await http.post("/message:send", json={"message": elsewhere}, headers=ALICE)
        assert answer.status_code == 400


@pytest.fixture
def file_host() -> Iterator[str]:
    """A plain HTTP server on loopback serving PNG at /dot.png (a thread of this process)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/dot.png" else 404)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(PNG)))
            self.end_headers()
            self.wfile.write(PNG)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def test_a_url_part_is_fetched_through_the_ssrf_guard(tmp_path: Path, file_host: str) -> None:
    message = {
        "messageId": "m1",
        "role": "ROLE_USER",
        "parts": [{"url": f"{file_host}/dot.png"}],
    }
    async with harness_server(f"sqlite:///{tmp_path / 'a.db'}") as http:
        refused = await http.post("/message:send", json={"message": message}, headers=ALICE)
        assert refused.status_code == 400
        assert "refused by the SSRF guard" in refused.json()["error"]["message"]
    allowed = MediaSettings(allow_hosts=("127.0.0.1",))
    async with harness_server(f"sqlite:///{tmp_path / 'b.db'}", media=allowed) as http:
        task = await send(http, message, ALICE)
        [part] = task["history"][0]["parts"]
        assert part["url"].startswith("http://localhost/media/")
        assert (part["filename"], part["mediaType"]) == ("dot.png", "image/png")
        got = await http.get(part["url"].removeprefix("http://localhost"), headers=ALICE)
        assert got.content == PNG
