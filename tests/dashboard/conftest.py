"""A real browser for the dashboard tests: Debian's Chromium (``/usr/bin/chromium``, which
``.ci/run`` installs when it is missing) driven by Playwright for Python. Playwright never
downloads a browser of its own here: it is pointed at that one, headless, with the flags
that keep Chromium off the network (it would otherwise call home at every start).

Screenshots go to ``$ACCORD_SCREENSHOTS`` (default: a folder of the test session's); running
the tests with ``ACCORD_SCREENSHOTS=docs/images`` renews the ones in the docs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

CHROMIUM = os.environ.get("ACCORD_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # root in CI
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
]


# Module-scoped, not session-scoped: while Playwright's sync API is open it runs an event
# loop in this thread, and the asyncio tests of the modules after it could not run theirs.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    launched = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    yield launched
    launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context (its own session storage), failing the test on a script error."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert not errors, f"the page's script failed: {errors}"


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("ACCORD_SCREENSHOTS")
    folder = Path(where) if where else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
