"""What several test files share, imported as ``tests.helpers``: the repository's paths and a
headless browser for the pages' offline rendering checks."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def chromium() -> str | None:
    """The path of an installed Chromium (or Chrome), or None."""
    return (
        shutil.which("chromium")
        or shutil.which("chromium-browser")
        or shutil.which("google-chrome")
    )


def headless(browser: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``browser`` headless, offline and with a fresh profile on ``args``."""
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tempfile.mkdtemp()}",
    ]
    return subprocess.run([browser, *flags, *args], capture_output=True, text=True, timeout=180)
