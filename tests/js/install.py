"""Installs the official JS SDK for the suite: ``npm ci`` from the committed lock file
(tests/js/package-lock.json) into tests/js/node_modules, when that is missing or was installed
from another lock file; nothing otherwise. Standard library only, so that a fresh machine runs
it before any virtualenv exists (``.ci/run``: ``python3 tests/js/install.py``); the suite's
session fixture ``js_sdk`` calls :func:`npm_ci` too. A file lock serialises parallel runs."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = HERE / "node_modules"
STAMP = MODULES / ".accord-installed"  # the digest of the lock file it was installed from


class NodeMissing(RuntimeError):
    """node or npm is not on the PATH: the JS interop tests cannot run."""


def _digest() -> str:
    lock = (HERE / "package-lock.json").read_bytes() + (HERE / "package.json").read_bytes()
    return hashlib.sha256(lock).hexdigest()


def installed() -> bool:
    """Whether node_modules holds what the lock file names."""
    return STAMP.is_file() and STAMP.read_text().strip() == _digest()


def npm_ci() -> Path:
    """tests/js with its node_modules installed from the lock file (``npm ci`` when missing
    or stale; nothing otherwise). Raises :class:`NodeMissing` or CalledProcessError."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise NodeMissing(f"{tool} is not on the PATH: the JS SDK tests need Node 20 and npm")
    with (HERE / ".npm-ci.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install at a time, the others wait for it
        if not installed():
            subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=HERE,
                check=True,
                timeout=600,
            )
            STAMP.write_text(_digest() + "\n")
    return HERE


if __name__ == "__main__":
    npm_ci()
