"""``interp-heads run`` (a whole experiment from a TOML config) and ``report`` (a run
folder's page rebuilt from its files)."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

from interp_heads.cli.early import command_config
from interp_heads.errors import PipelineError, one_line
from interp_heads.store.folder import RunFolder


def cmd_run(args) -> int:
    """Run the whole pipeline from a TOML config (resumes an interrupted run)."""
    from interp_heads.pipeline.experiment import run_pipeline

    config = command_config(args)  # the TOML, and the flags that override it
    chatter = contextlib.redirect_stdout(io.StringIO()) if args.quiet else contextlib.nullcontext()
    with chatter:  # --quiet: no "Moving model to device" from TransformerLens
        index = run_pipeline(config, args.out, force=args.force, quiet=args.quiet)
    print(f"wrote {index}")
    return 0


def _built(run_dir: Path, written: list, static) -> Path:
    """``build_report``; a folder file it cannot show (edited by hand into something no step
    writes) is one line naming the folder, not an internal error (``INTERP_HEADS_DEBUG=1``
    shows the traceback)."""
    from interp_heads.report import build_report

    try:
        return build_report(run_dir, written=written, static=static)
    except (PipelineError, OSError):
        raise
    except Exception as exc:
        if os.environ.get("INTERP_HEADS_DEBUG"):
            raise
        raise PipelineError(
            f"{str(run_dir)!r}: a file of the run folder cannot be shown "
            f"({type(exc).__name__}: {one_line(exc)}); was it edited by hand?"
        ) from None


def cmd_report(args) -> int:
    """Rebuild figures and index.html of a run folder from its saved results (no model);
    --static svg,png also writes every figure as an image for papers."""
    run_dir = Path(args.dir)
    if not run_dir.is_dir() or not RunFolder(run_dir).is_run():
        raise PipelineError(
            f"{str(run_dir)!r} is not a run folder (no manifest.json, summary or attribution)"
        )
    from interp_heads.run import RunWriter

    folder = RunFolder(run_dir)
    folder.check_links()  # the page and figures are written inside the folder only
    folder.lock()
    folder.clean_temps()  # killed writes' leftovers, and any link planted under such a name
    written: list = []
    static = getattr(args, "static", None)
    index = _built(run_dir, written, static)
    RunWriter(folder).note_report(written)  # the tool's files, retired by a later --force run
    print(f"wrote {index}")
    if static:
        images = [p for p in written if p.suffix.lstrip(".") in static]
        print(f"wrote {len(images)} static image(s) to {folder.figures}")
    return 0
