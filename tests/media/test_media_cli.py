"""``accord send --file`` against ``accord serve --agent harness``: the file is stored on the
server, the message carries its URL, a participant reads it back byte for byte, someone
else gets the unknown answer, and a file over the limit is refused."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from tests.harness.harness_proc import ACCORD, harness_serve

pytestmark = pytest.mark.processes


def accord(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ACCORD), *args], capture_output=True, text=True, timeout=60)


def test_send_file_through_the_command_line(tmp_path: Path) -> None:
    photo = tmp_path / "photo.png"
    photo.write_bytes(os.urandom(3000))
    notes = tmp_path / "notes.txt"
    notes.write_text("two days in June\n")
    big = tmp_path / "big.bin"
    big.write_bytes(b"z" * 5000)
    with harness_serve(tmp_path, extra="\n[media]\nmax_file_bytes = 4000\n", grpc=False) as server:
        sent = accord(
            "send", server.url, "see these", "--file", str(photo), "--file", str(notes),
            "--as", "alice", "--json",
        )  # fmt: skip
        assert sent.returncode == 0, sent.stderr
        task = json.loads(sent.stdout)["task"]
        first = task["history"][0]
        files = [part for part in first["parts"] if "url" in part]
        assert [(f["filename"], f["mediaType"]) for f in files] == [
            ("photo.png", "image/png"),
            ("notes.txt", "text/plain"),
        ]
        assert all("raw" not in part for part in first["parts"])
        with httpx.Client(timeout=10) as http:
            got = http.get(files[0]["url"], headers={"X-Participant-Id": "alice"})
            assert got.status_code == 200 and got.content == photo.read_bytes()
            part = http.get(
                files[1]["url"], headers={"X-Participant-Id": "alice", "Range": "bytes=4-7"}
            )
            assert (part.status_code, part.content) == (206, b"days")
            unknown = http.get(f"{server.url}/media/BBBBBBBBBBBBBBBBBBBBBBBB")
            stranger = http.get(files[0]["url"], headers={"X-Participant-Id": "mallory"})
            assert (stranger.status_code, stranger.content) == (404, unknown.content)
        refused = accord("send", server.url, "and this", "--file", str(big), "--as", "alice")
        assert refused.returncode == 1
        assert "exceeds 4000 bytes" in refused.stderr
