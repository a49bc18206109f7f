"""Running the installed ``accord`` command in the CLI tests."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from accord_server import ACCORD, TOKEN


def accord(
    *args: str, token: bool = True, timeout: float = 60, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    command = [ACCORD, *args, *(["--token", TOKEN] if token else [])]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False, input=stdin
    )


def json_out(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout)
