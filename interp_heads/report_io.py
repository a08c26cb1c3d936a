"""Run-directory helpers: one-line input errors, atomic writes, provenance, folder checks."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class PipelineError(ValueError):
    """A bad input (config, task, model, folder); the message is one line naming the problem."""


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def versions() -> dict[str, str]:
    out = {}
    for pkg in ("interp_heads", "torch", "transformer-lens", "transformers", "plotly", "pandas", "numpy", "unbabel-comet"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "absent"
    return out


def git_hash() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def prepare_out_dir(out_dir: Path, digest: str, force: bool) -> None:
    """Refuse a folder holding another run's config (unless ``force``) or one that is not writable."""
    manifest = out_dir / "manifest.json"
    if out_dir.exists() and not out_dir.is_dir():
        raise PipelineError(f"output {str(out_dir)!r} exists and is not a directory")
    if manifest.exists():
        try:
            theirs = json.loads(manifest.read_text()).get("config_digest")
        except (OSError, json.JSONDecodeError):
            theirs = None
        if theirs != digest and not force:
            raise PipelineError(f"{str(out_dir)!r} holds a run with a different config; use --force or another --out")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / f".write-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise PipelineError(f"output directory {str(out_dir)!r} is not writable ({exc.strerror or exc})") from None
