"""``scripts/probe.py`` — hostile clients against real ``accord serve`` processes — passes
every probe, so CI re-runs the probes of the security review on every change."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "probe.py"


def test_every_probe_passes(tmp_path: Path) -> None:
    listed = subprocess.run(
        [sys.executable, str(SCRIPT), "--list"], capture_output=True, text=True, timeout=60
    )
    names = listed.stdout.splitlines()
    assert listed.returncode == 0 and len(names) >= 15, listed.stderr
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=900, cwd=tmp_path
    )
    lines = done.stdout.splitlines()
    assert [line for line in lines if not line.startswith("PASS ")] == [], done.stderr
    assert len(lines) == len(names)
    assert done.returncode == 0
