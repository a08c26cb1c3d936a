"""What a run's page says about the run: its tasks, status, sections, ranking and next command.

All of it comes from ``manifest.json``. The manifest lists the steps planned (``plan``) and those
finished under its config (``steps``): a table of the folder that no finished step of this config
wrote (one left by an earlier config, a killed ``--force`` rerun) is not shown, and the status
names the step that finished last. Manifests without ``steps`` (older runs) show every table.
"""

from __future__ import annotations

import shlex

from interp_heads.figures.escape import esc, esc_num

# which step writes which saved piece of a run (``load_run``'s keys)
WRITTEN_BY = {
    "baseline": "baseline",
    "attribution": "attribute",
    "known": "known",
    "summary": "tables",
    "records": "tables",
    "significance": "tables",
    "generations": "tables",
}


def current(run: dict) -> dict:
    """``run`` without the pieces no finished step of the manifest's config wrote."""
    steps = (run.get("manifest") or {}).get("steps")
    if not isinstance(steps, list):
        return run
    return {k: (None if WRITTEN_BY.get(k, "") and WRITTEN_BY[k] not in steps else v)
            for k, v in run.items()}  # fmt: skip


def task_names(manifest: dict, run: dict) -> list[str]:
    """The run's task names: from its tables, else the manifest's data, else its config."""
    for key in ("summary", "attribution", "baseline"):
        frame = run.get(key)
        if frame is not None and "task" in frame.columns and len(frame):
            return [str(t) for t in dict.fromkeys(frame["task"])]
    cfg = manifest.get("config") or {}
    names = list(manifest.get("data") or {}) or list(cfg.get("tasks") or [])
    return names or ([str(cfg["task"])] if cfg.get("task") else [])


def status_line(manifest: dict) -> str:
    """``Status: complete (... finished), 73 s; config digest ...`` from the manifest's steps."""
    if not manifest:
        return '<p class="note">No manifest.json: provenance unknown.</p>'
    steps, plan = manifest.get("steps"), manifest.get("plan")
    if isinstance(steps, list) and isinstance(plan, list):
        todo = [s for s in plan if s != "report" and s not in steps]
        status = "complete" if not todo else "incomplete"
        done = ", ".join(s for s in steps if s != "report") or "none"
        status += f" (finished: {done}" + (f"; not run: {', '.join(todo)})" if todo else ")")
    else:
        status = str(manifest.get("status", "?"))
    if manifest.get("status") == "failed":
        status += f"; stopped by an error: {manifest.get('error', '?')}"
    total = (manifest.get("timings") or {}).get("total")
    when = f", {esc_num(total, '.0f')} s" if isinstance(total, int | float) else ""
    digest = esc(manifest.get("config_digest", "?"))
    return f'<p class="note">Status: {esc(status)}{when}; config digest {digest}.</p>'


def next_command(manifest: dict, run_dir: str) -> str:
    """The command line a user would run next, as an HTML paragraph ("" when there is none)."""
    cfg = manifest.get("config") or {}
    steps, plan = manifest.get("steps"), manifest.get("plan")
    if isinstance(steps, list) and isinstance(plan, list):
        if [s for s in plan if s != "report" and s not in steps]:
            return _para("The run stopped early; rerun the command that made it to resume.", "")
    command = manifest.get("command")
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


def ranking_section(manifest: dict) -> str:
    """The ranking an ``ablate`` run masked: its file (linked) and its top heads ("" otherwise)."""
    if manifest.get("command") != "ablate":
        return ""
    ranking = manifest.get("ranking") or {}
    source = ranking.get("source")
    heads = (manifest.get("config") or {}).get("heads") or []
    labels = [f"L{h[0]}H{h[1]}" for h in heads if isinstance(h, list | tuple) and len(h) == 2]
    top = ", ".join(labels[:16]) + (" ..." if len(labels) > 16 else "")
    if source:
        from pathlib import Path

        uri = Path(str(ranking.get("path") or source)).resolve().as_uri()
        what = f'ranking <a href="{esc(uri)}">{esc(source)}</a>'
        prov = ranking.get("info") or {}
        if prov:
            what += " (" + esc(", ".join(f"{k} {v}" for k, v in prov.items())) + ")"
    else:
        what = "heads given with --heads"
    return (f"<h2>Ranking masked</h2><p>Masked heads from {what}; order: "
            f"{esc(top) or 'none'}.</p>")  # fmt: skip
