"""The Makefile on a fresh clone: ``make run`` installs the runtime only, ``make test`` adds
the dev extras; pip is not silenced. Checked with ``make -n`` (what make would run) on a copy
of the Makefile and pyproject.toml, so nothing is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.processes,
    pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed"),
]


def would_run(target: str, clone: Path) -> list[str]:
    # Under `make test` the outer make's flags and level are inherited: not for this one.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.splitlines()


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def installs(commands: list[str]) -> list[str]:
    return [command for command in commands if " install " in command]


def test_make_run_installs_the_runtime_with_its_extras_only(clone: Path) -> None:
    commands = would_run("run", clone)
    assert commands[-1].startswith(".venv/bin/accord serve")
    assert any(command.endswith("pip install -e '.[all]'") for command in commands)
    assert not any("[dev]" in command for command in commands)
    assert not any("--quiet" in command or " -q" in command for command in installs(commands))


def test_make_test_adds_the_dev_extras(clone: Path) -> None:
    commands = would_run("test", clone)
    assert commands[-1].startswith(".venv/bin/pytest")
    assert any(command.endswith("pip install -e '.[dev]'") for command in commands)
    assert not any("--quiet" in command or " -q" in command for command in installs(commands))


def test_make_test_fast_runs_the_unit_tests_only(clone: Path) -> None:
    commands = would_run("test-fast", clone)
    assert commands[-1].startswith(".venv/bin/pytest -m unit")


def test_make_run_after_make_test_installs_nothing_more(clone: Path) -> None:
    (clone / ".venv" / "bin").mkdir(parents=True)
    (clone / ".venv" / "bin" / "python").touch()
    for stamp in (".installed-runtime", ".installed"):
        (clone / ".venv" / stamp).touch()
    assert installs(would_run("run", clone)) == []
    assert installs(would_run("test", clone)) == []
