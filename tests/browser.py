"""Headless Chromium for the browser tests (the report, the web UI): Debian's chromium, which
.ci/run installs, driven by the test extras' Playwright, started as the machine's notes start it
(no sandbox as root, no GPU, no background connections)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NO_PLAYWRIGHT = "playwright is not installed (the test extras have it)"
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (.ci/run installs Debian's chromium)")


def launch() -> Iterator[Any]:
    """A browser for a module's tests (use as a fixture's body)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason=NO_PLAYWRIGHT)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()
