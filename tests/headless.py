"""Debian's Chromium, headless, driven by Playwright (the `test` extra; it drives the
system's Chromium and downloads no browser of its own): the pages the grader writes are
tested in a real browser. A machine without either fails those tests with the fix: a check
that cannot run is not a pass."""

from __future__ import annotations

import shutil
from contextlib import contextmanager

import pytest

BROWSERS = ("chromium", "chromium-browser")


def chromium() -> str:
    found = next((p for p in map(shutil.which, BROWSERS) if p), None)
    if found is None:
        pytest.fail("Chromium is not installed here (no chromium on PATH): `apt-get install "
                    "chromium` (.ci/run does) to run the browser tests")
    return found


@contextmanager
def launched():
    """A headless Chromium for the tests of one module."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright is not installed: `python -m grader.install test` installs the "
                    "test extra, which has it")
    executable = chromium()
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def watched(browser, url: str, viewport: dict):
    """`url` open in a fresh page; `page.problems` collects what the browser said was wrong
    (console errors and warnings, uncaught exceptions, requests beyond the page's own file)."""
    opened = browser.new_page(viewport=viewport)
    problems: list[str] = []
    opened.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
              if m.type in ("error", "warning") else None)
    opened.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
    opened.on("request", lambda r: problems.append(f"request: {r.url}") if r.url != url else None)
    opened.goto(url)
    opened.problems = problems
    return opened
