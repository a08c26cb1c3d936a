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
        if pkg == "interp_heads":  # the code's own version (an editable install's metadata lags)
            import interp_heads

            out[pkg] = interp_heads.__version__
            continue
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
