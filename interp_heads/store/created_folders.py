"""The run folders this process created, and the topmost folder it made for each.

``RunFolder.claim`` records a folder it had to create; ``store.lifecycle.removed_if_unused``
removes those that hold nothing needed when the command fails.
"""

from __future__ import annotations

from pathlib import Path

created: dict[Path, Path] = {}  # run folder -> the topmost folder this process made for it


def note_created(root: Path, top: Path) -> None:
    """Record that this process made ``root`` (and every folder from ``top`` down to it)."""
    created.setdefault(Path(root).absolute(), Path(top).absolute())
