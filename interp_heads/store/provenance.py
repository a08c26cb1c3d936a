"""What produced a result: package versions and the git commit of the code."""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


PACKAGES = (
    "interp_heads",
    "torch",
    "transformer-lens",
    "transformers",
    "plotly",
    "pandas",
    "numpy",
    "unbabel-comet",
)


def versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """``{package: version}`` (``"absent"`` for one not installed)."""
    out = {}
    for pkg in packages:
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "absent"
    return out


def git_hash() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None
