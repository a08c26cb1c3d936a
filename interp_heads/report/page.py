"""What a run's page says about the run: its tasks, status, sections, ranking and next command.

All of it comes from ``manifest.json``. The manifest lists the steps planned (``plan``) and those
finished under its config (``steps``): a table of the folder that no finished step of this config
wrote (one left by an earlier config, a killed ``--force`` rerun) is not shown, and the status
names the step that finished last. Manifests without ``steps`` (older runs) show every table.
"""

from __future__ import annotations

import os
import shlex
import urllib.parse
from pathlib import Path

from interp_heads.figures.escape import esc, esc_num
from interp_heads.run.manifest import Manifest

# which step writes which saved piece of a run (``load_run``'s keys)
WRITTEN_BY = {
    "baseline": "baseline",
    "attribution": "attribute",
    "known": "known",
    "summary": "tables",
    "records": "tables",
    "significance": "tables",
    "generations": "tables",
    "prompts": "tables",
    "attention": "attention",
    "sufficiency": "sufficiency",
    "sufficiency_curves": "sufficiency",
    "sufficiency_verdicts": "sufficiency",
    "sufficient_sets": "sufficiency",
}


def current(run: dict) -> dict:
    """``run`` without the pieces no finished step of the manifest's config wrote (nor the known
    heads of an earlier invocation when this one skipped them)."""
    manifest = Manifest.of(run.get("manifest"))
    if "skipped" in (manifest.known_heads or {}):
        run = {**run, "known": None}
    steps = manifest.steps
    if steps is None:
        return run
    return {k: (None if WRITTEN_BY.get(k, "") and WRITTEN_BY[k] not in steps else v)
            for k, v in run.items()}  # fmt: skip


def task_names(manifest: Manifest | dict | None, run: dict) -> list[str]:
    """The run's task names: from its tables, else the manifest's data, else its config."""
    for key in ("summary", "attribution", "baseline"):
        frame = run.get(key)
        if frame is not None and "task" in frame.columns and len(frame):
            return [str(t) for t in dict.fromkeys(frame["task"])]
    manifest = Manifest.of(manifest)
    cfg = manifest.config or {}
    names = list(manifest.data or {}) or list(cfg.get("tasks") or [])
    return names or ([str(cfg["task"])] if cfg.get("task") else [])


def status_line(manifest: Manifest | dict | None) -> str:
    """``Status: complete (... finished), 73 s; config digest ...`` from the manifest's steps."""
    manifest = Manifest.of(manifest)
    if not manifest:
        return '<p class="note">No manifest.json: provenance unknown.</p>'
    steps, todo = manifest.steps, manifest.todo()
    if todo is not None:
        status = "complete" if not todo else "incomplete"
        done = ", ".join(s for s in steps if s != "report") or "none"
        status += f" (finished: {done}" + (f"; not run: {', '.join(todo)})" if todo else ")")
    else:
        status = "?" if manifest.status is None else manifest.status
    if manifest.status == "failed":
        status += f"; stopped by an error: {'?' if manifest.error is None else manifest.error}"
    total = manifest.total_seconds
    when = f", {esc_num(total, '.0f')} s" if total is not None else ""
    digest = esc("?" if manifest.config_digest is None else manifest.config_digest)
    return f'<p class="note">Status: {esc(status)}{when}; config digest {digest}.</p>'


def next_command(manifest: Manifest | dict | None, run_dir: str) -> str:
    """The command line a user would run next, as an HTML paragraph ("" when there is none)."""
    manifest = Manifest.of(manifest)
    cfg = manifest.config or {}
    if manifest.todo():
        return _para("The run stopped early; rerun the command that made it to resume.", "")
    command = manifest.command
    if command == "attribute":
        tasks = cfg.get("tasks") or ["TASK"]
        argv = ["interp-heads", "ablate", "--model", str(cfg.get("model", "MODEL")),
                "--task", str(tasks[0]), "--ranking", run_dir, "--out", f"{run_dir}-ablate"]  # fmt: skip
        return _para("Next: mask the top heads of this ranking against random ones:", argv)
    return _para("Rebuild this page from the saved files:", ["interp-heads", "report", run_dir])


def _para(text: str, argv: list[str] | str) -> str:
    line = shlex.join(argv) if isinstance(argv, list) else argv
    code = f"<pre>{esc(line)}</pre>" if line else ""
    return f'<p class="note">{esc(text)}</p>{code}'


def relative_href(target: str | os.PathLike, run_dir: str | os.PathLike) -> str:
    """A link from the run folder's ``index.html`` to ``target``: a relative URL, so the folder
    can move (with its neighbours) or be served; a run folder's link goes to its page."""
    path = Path(target)
    if path.is_dir() and (path / "index.html").is_file():
        path = path / "index.html"
    try:
        rel = os.path.relpath(path.resolve(), Path(run_dir).resolve())
    except ValueError:  # another drive (Windows): no relative path exists
        return path.resolve().as_uri()
    return urllib.parse.quote(Path(rel).as_posix())


def ranking_section(manifest: Manifest | dict | None, run_dir: str | os.PathLike = ".") -> str:
    """The ranking an ``ablate`` run masked: its file (linked relatively) and its top heads ("" otherwise)."""
    manifest = Manifest.of(manifest)
    if manifest.command != "ablate":
        return ""
    ranking = manifest.ranking or {}
    source = ranking.get("source")
    # the ranking's own order (the manifest records it for --ranking and --heads alike); the
    # config's heads are empty when they come from a ranking file
    heads = ranking.get("heads") or (manifest.config or {}).get("heads") or []
    labels = [h if isinstance(h, str) else f"L{h[0]}H{h[1]}" for h in heads
              if isinstance(h, str) or (isinstance(h, list | tuple) and len(h) == 2)]  # fmt: skip
    top = ", ".join(labels[:16]) + (" ..." if len(labels) > 16 else "")
    if source:
        href = relative_href(str(ranking.get("path") or source), run_dir)
        what = f'ranking <a href="{esc(href)}">{esc(str(source))}</a>'
        prov = ranking.get("info") or {}
        if prov:
            what += " (" + esc(", ".join(f"{k} {v}" for k, v in prov.items())) + ")"
    else:
        what = "heads given with --heads"
    return (f"<h2>Ranking masked</h2><p>Masked heads from {what}; order: "
            f"{esc(top) or 'none'}.</p>")  # fmt: skip


def outline_k(manifest: Manifest | dict | None, n_total: int) -> int:
    """The k whose TopK heads a heatmap outlines: the run's smallest k, else 8 (``attribute``)."""
    ks = [int(k) for k in (Manifest.of(manifest).ks or []) if 0 < int(k) < n_total]
    return min(ks) if ks else min(8, max(1, n_total // 4))


STAND_IN = " (offline stand-in, not COMET)"


def asked_metrics(manifest: Manifest | dict | None) -> list[str]:
    """The metric names the run was asked for (a run's config, or an ``ablate`` run's sweep)."""
    cfg = Manifest.of(manifest).config or {}
    names = cfg.get("metrics") or (cfg.get("sweep") or {}).get("metrics") or []
    return [str(n) for n in names]


def metric_label(name: str, label: str, asked: list[str]) -> str:
    """A metric's label on the page: "offline stand-in, not COMET" only when it stood in for a
    COMET that was asked for and did not load, not when the metric was asked for by name."""
    if STAND_IN in label and (name in asked or "comet" not in asked):
        return label.replace(STAND_IN, "")
    return label


def relabelled(run: dict) -> dict:
    """``run`` with the ``label`` column of its tables as :func:`metric_label` words it."""
    asked = asked_metrics(run.get("manifest") or {})
    out = dict(run)
    for key in ("summary", "records", "significance"):
        frame = run.get(key)
        if frame is not None and {"metric", "label"} <= set(frame.columns):
            labels = [metric_label(str(n), str(lab), asked)
                      for n, lab in zip(frame["metric"], frame["label"], strict=True)]  # fmt: skip
            out[key] = frame.assign(label=labels)
    return out


def files_section(run_dir: str | os.PathLike) -> str:
    """Links (relative) to the run folder's data files that exist, with what each holds."""
    from interp_heads.store.folder import RunFolder

    f = RunFolder(run_dir)
    files = [
        (f.generations, "every generated answer, per condition and example"),
        (f.prompts, "the prompt each evaluated example was given, as the model saw it"),
        (f.sweep_parquet, "every score: one row per condition, example and metric"),
        (f.summary_csv, "mean and 95% CI per task, selection, k and metric"),
        (f.significance_csv, "TopK minus each random control, CI and p-value"),
        (f.baseline_csv, "the unmasked model's accuracy and the rank/eval split sizes"),
        (f.ranking_csv, "every head's score and rank, per task"),
        (f.attribution_parquet, "the same as a table with the method"),
        (f.known_csv, "known head kinds: every head's score per kind"),
        (f.attention, "attention patterns of the top heads on the task's prompts"),
        (f.manifest, "config, digest, splits, versions, timings"),
    ]
    items = [
        f'<li><a href="{esc(urllib.parse.quote(path.name))}">{esc(path.name)}</a>: {esc(what)}</li>'
        for path, what in files
        if path.is_file()
    ]
    if not items:
        return ""
    return "<h2>Data files</h2><ul class='files'>" + "".join(items) + "</ul>"
