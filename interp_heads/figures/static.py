"""Static images of figures (SVG, PDF, PNG) for papers and for pages that cannot run JavaScript.

Plotly draws static images through kaleido (pinned in ``pyproject.toml`` and ``constraints.txt``),
which drives a Chrome or Chromium already on the machine (Debian: ``apt-get install chromium``;
``BROWSER_PATH`` names another): nothing is downloaded. :func:`write_static` writes several
figures in one browser session (a few seconds in all, not per figure), each file through a
temporary name and a rename, so a failed export leaves no half-written image.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from interp_heads.errors import InputError

FORMATS = ("svg", "pdf", "png")
PNG_SCALE = 2  # pixels per layout pixel in a PNG (sharp on a paper's page and a screen)


class StaticExportError(InputError):
    """Static images cannot be written here (kaleido or a Chrome/Chromium is missing): a setup
    to fix, reported as one line (CLI: exit 2), like a metric that cannot load."""


def parse_formats(value: str | Iterable[str]) -> list[str]:
    """``"svg,png"`` or ``["svg", "png"]`` -> ``["svg", "png"]``, each one of :data:`FORMATS`.

    Raises:
        InputError: an empty list or a format not in :data:`FORMATS`, named (a ValueError).
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    names = list(dict.fromkeys(s.strip().lower().lstrip(".") for s in items if s.strip()))
    bad = [n for n in names if n not in FORMATS]
    if bad or not names:
        raise InputError(
            f"static formats {', '.join(bad) or '(none)'}: choose from {', '.join(FORMATS)}"
        )
    return names


def write_static(
    figs: Mapping[str, object], folder: str | os.PathLike, formats: Iterable[str] = ("svg",)
) -> list[Path]:
    """Write each figure of ``figs`` (``{name: go.Figure}``) as ``folder/<name>.<format>``.

    Returns:
        The files written, in the order of ``figs`` and ``formats``.

    Raises:
        InputError: a format not in :data:`FORMATS` (a ValueError).
        StaticExportError: kaleido is not installed or finds no Chrome/Chromium.
    """
    formats = parse_formats(formats)
    if not figs:
        return []
    try:
        import kaleido  # noqa: F401  (plotly's engine for static images)
    except ImportError:
        raise StaticExportError(
            "static figures need kaleido: pip install -c constraints.txt kaleido"
        ) from None
    import plotly.io as pio

    from interp_heads.store.files import create_new, is_plain

    folder = Path(folder)
    if folder.is_symlink():  # the images go into a real folder, never through a link
        raise StaticExportError(f"{str(folder)!r} is a symbolic link; not written through")
    folder.mkdir(parents=True, exist_ok=True)
    jobs = [(name, fmt) for name in figs for fmt in formats]
    final = [folder / f"{name}.{fmt}" for name, fmt in jobs]
    temps = [
        p.with_name(f".{p.stem}.tmp{os.getpid()}.{fmt}")
        for p, (_, fmt) in zip(final, jobs, strict=True)
    ]
    chosen = [figs[name] for name, _ in jobs]
    for tmp in temps:  # kaleido writes into files of ours, never through a link planted there
        os.close(create_new(tmp))
    try:
        pio.write_images(
            chosen, temps, format=[fmt for _, fmt in jobs],
            scale=[PNG_SCALE if fmt == "png" else 1 for _, fmt in jobs],
            width=[_size(f, "width") for f in chosen], height=[_size(f, "height") for f in chosen],
        )  # fmt: skip
    except Exception as exc:  # kaleido's and choreographer's own errors (no browser, ...)
        for tmp in temps:
            tmp.unlink(missing_ok=True)
        raise StaticExportError(f"static export failed: {_why(exc)}") from None
    for tmp, path in zip(temps, final, strict=True):
        if not is_plain(tmp):
            raise StaticExportError(f"{tmp} is no longer a plain file; not renamed onto {path}")
        os.replace(tmp, path)
    return final


def _size(fig, side: str) -> int | None:
    """The figure's own layout width or height: kaleido would export at plotly's default
    700 x 500 otherwise, squeezing a figure laid out for more room."""
    value = getattr(fig.layout, side)
    return int(value) if value else None


def _why(exc: Exception) -> str:
    name = type(exc).__name__
    if "ChromeNotFound" in name or "BrowserFailed" in name or "BrowserDeps" in name:
        return (
            f"{name}: kaleido needs a Chrome or Chromium (apt-get install chromium; "
            "BROWSER_PATH=/path/to/chrome names another)"
        )
    line = str(exc).strip().splitlines()
    return f"{name}: {line[0] if line else ''}"
