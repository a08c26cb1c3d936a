"""What several test files share, imported as ``tests.helpers``: the repository's paths, the
command line called in-process, a folder's file digests and a headless browser for the pages'
offline rendering checks."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def cli(*argv, ignore_warnings: bool = True) -> int:
    """``interp-heads ARGV...`` in this process (arguments as strings); its exit status."""
    from interp_heads.cli import main

    with warnings.catch_warnings():
        if ignore_warnings:
            warnings.simplefilter("ignore")
        return main([str(a) for a in argv])


def snapshot(folder: Path, skip=lambda path: False) -> dict:
    """Every file under ``folder`` (but those ``skip`` names) and its SHA-256: what a refused or
    killed command must leave unchanged."""
    return {
        p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not skip(p)
    }


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
