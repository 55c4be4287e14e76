"""Headless Chromium for the tests that render report.html: found on PATH (a skip without it, a failure under
CI), run with a throw-away profile, and a parser listing a page's start tags."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser

import pytest


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    message = "Chromium is not installed (Debian: apt-get install chromium); it renders report.html in this test"
    if os.environ.get("CI"):
        pytest.fail(message + " (CI must run it: .ci/run installs it)")
    pytest.skip(message)


def headless(binary: str, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        cmd = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=15000",
            *args,
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


class Elements(HTMLParser):
    """Every start tag with its attributes, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
