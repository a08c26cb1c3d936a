"""HTML tables of the run report (baseline, TopK vs RandomK, example generations, provenance)."""

from __future__ import annotations

import json

import pandas as pd

from interp_heads.choices import BASELINE
from interp_heads.figures.escape import esc, esc_table
from interp_heads.interventions.selections import RandomK, TopK, display_names
from interp_heads.run.manifest import Manifest
from interp_heads.sweep import stats
from interp_heads.sweep.inference import holm

TOPK, RANDOMK = TopK.display, RandomK.display


def _none(what: str) -> str:
    return f'<p class="note">No {esc(what)}.</p>'


def _table(frame: pd.DataFrame, multiline: bool = False) -> str:
    """Every cell and header escaped (``figures.escape``); ``multiline``: newlines as ``<br>``."""
    return esc_table(frame, newlines=multiline)


def baseline_table(frame: pd.DataFrame | None) -> str:
    """The unmasked model's accuracy per task and the rank/eval split sizes."""
    if frame is None or frame.empty:
        return _none("baseline table")
    out = frame.copy()
    if "accuracy" in out:
        out["accuracy"] = out["accuracy"].map(lambda v: f"{v:.3f}" if v == v else "")
    return _table(out)


def topk_vs_random_table(summary: pd.DataFrame | None, sig: pd.DataFrame | None = None) -> str:
    """Mean [95% CI] per task, metric and k for every selection, with the unmasked score.

    With ``sig`` (``sweep.stats.significance``), a TopK cell is marked ``*`` when TopK is significantly
    different from RandomK at that k with enough examples and draws to say so (``stats.too_few``).
    """
    if summary is None or summary.empty:
        return _none("sweep summary")
    s = summary[summary.selection != BASELINE].copy()
    if s.empty:
        return _none("masked conditions")
    marked = set()
    if sig is not None and len(sig):
        hit = sig[sig.control == RANDOMK]
        marked = {(r.task, int(r.k), r.metric) for r in hit.itertuples() if stats.decided(r)}
    s["cell"] = [
        f"{m:.3f} [{lo:.3f}, {hi:.3f}]"
        + (" *" if sel == TOPK and (t, int(k), me) in marked else "")
        for m, lo, hi, sel, t, k, me in zip(
            s["mean"], s.ci_low, s.ci_high, s.selection, s.task, s.k, s.metric, strict=True
        )
    ]
    wide = s.pivot_table(
        index=["task", "label", "k"], columns="selection", values="cell", aggfunc="first"
    )
    order = display_names()
    cols = [c for c in order if c in wide.columns] + [c for c in wide.columns if c not in order]
    wide = wide[cols].reset_index().rename(columns={"label": "metric"})
    wide.columns.name = None
    base = summary[summary.selection == BASELINE].set_index(["task", "label"])["mean"]
    wide.insert(
        3,
        "unmasked",
        [
            f"{base.get((t, m), float('nan')):.3f}"
            for t, m in zip(wide.task, wide.metric, strict=True)
        ],
    )
    return _table(wide)


def significance_table(sig: pd.DataFrame | None) -> str:
    """TopK minus each random control: difference [95% CI], p-value and its Holm adjustment over
    the table's rows, verdict, drops, the smallest difference detectable with 80% power, counts.

    The p-values and the ``*`` are shown only with enough examples and random draws
    (``sweep.stats.too_few``); the verdict column says in words what the row shows. A table
    stored before Holm's column existed gets it computed here, over the same rows.
    """
    if sig is None or sig.empty:
        return _none("significance table")
    sig = sig.assign(p_holm=sig["p_holm"] if "p_holm" in sig else holm(sig["p_value"]))
    rows = []
    for r in sig.itertuples(index=False):
        ok = stats.too_few(r.n_examples, r.n_draws) is None
        mde = getattr(r, "mde", float("nan"))
        rows.append(
            {
                "task": r.task,
                "metric": r.label,
                "k": int(r.k),
                "control": r.control,
                "TopK - control": f"{r.diff:+.3f} [{r.diff_low:+.3f}, {r.diff_high:+.3f}]"
                + (" *" if stats.decided(r) else ""),
                "p": stats.format_p(r.p_value) if ok else "",
                "p (Holm)": stats.format_p(r.p_holm) if ok else "",
                "verdict": stats.verdict(r),
                "drop ratio (TopK / control)": stats.drops_text(r.top_drop, r.control_drop),
                "detectable (80% power)": f"{mde:.3f}" if mde == mde else "",
                "examples, draws": f"{int(r.n_examples)}, {int(r.n_draws)}",
            }
        )
    return _table(pd.DataFrame(rows))


def examples_table(gens: pd.DataFrame | None, n_per_task: int = 4) -> str:
    """A few evaluated examples: reference, unmasked answer, TopK and RandomK answers at the largest k."""
    if gens is None or gens.empty:
        return _none("generations")
    rows = []
    for task, g in gens.groupby("task", sort=False):
        kmax = int(g.k.max())
        base = g[g.selection == BASELINE].set_index("example_id")
        top = g[(g.selection == TOPK) & (g.k == kmax)].set_index("example_id")
        rnd = g[(g.selection == RANDOMK) & (g.k == kmax) & (g.seed == 0)].set_index("example_id")
        for ex in list(dict.fromkeys(g.example_id))[:n_per_task]:
            rows.append(
                {
                    "task": task,
                    "question": _get(base, ex, "question"),
                    "reference": _get(base, ex, "answer"),
                    "unmasked": _get(base, ex, "generation"),
                    f"TopK k={kmax}": _get(top, ex, "generation"),
                    f"RandomK k={kmax} (seed 0)": _get(rnd, ex, "generation"),
                }
            )
    return _table(pd.DataFrame(rows), multiline=True)


def _get(frame: pd.DataFrame, ex, col: str) -> str:
    if col not in frame.columns or ex not in frame.index:
        return ""
    value = frame.loc[ex, col]
    if isinstance(value, pd.Series):
        value = value.iloc[0]
    return "" if value is None else str(value)


def provenance_table(manifest: Manifest | dict | None) -> str:
    """Model, data hashes, versions, git hash, seeds, timings, and the full manifest."""
    manifest = Manifest.of(manifest)
    if not manifest:
        return _none("manifest")
    rows = [
        ("model", json.dumps(manifest.model or {})),
        ("git", manifest.git or "unknown"),
        ("versions", ", ".join(f"{k} {v}" for k, v in (manifest.versions or {}).items())),
    ]
    rows += [
        (k, json.dumps(v))
        for k, v in (("seeds", manifest.seeds), ("metrics", manifest.metrics))
        if v
    ]
    rows += [
        (
            f"data: {n}",
            f"{d.get('n_examples')} examples, sha256 {str(d.get('sha256'))[:16]}, {d.get('source')}",
        )
        for n, d in (manifest.data or {}).items()
    ]
    rows += [
        (f"time: {k}", f"{v:.1f} s")
        for k, v in (manifest.timings or {}).items()
        if isinstance(v, int | float)
    ]
    table = _table(pd.DataFrame(rows, columns=["item", "value"]))
    full = esc(json.dumps(manifest.to_dict(), indent=1, default=str))
    return table + f"<details><summary>manifest.json</summary><pre>{full}</pre></details>"


def probe_table(manifest: Manifest | dict | None) -> str:
    """The probe's held-out accuracy against its chance level (``attribution = "probe"`` runs)."""
    manifest = Manifest.of(manifest)
    p = manifest.probe or {}
    if not p:
        return ""
    rows = "rows masked" if p.get("rows") == "evaluated" else "held-out"
    row = {
        "probe": f"{p.get('kind')} on hook_z at {p.get('position')!r}",
        f"{p.get('labels', 'tasks')} (labels)": ", ".join(p.get("tasks") or []),
        f"accuracy ({rows})": p.get("heldout_accuracy"),
        "chance (1 / labels)": round(1 / len(p["tasks"]), 4) if p.get("tasks") else None,
        "largest label's share": p.get("majority", p.get("chance")),
        "train accuracy": p.get("train_accuracy"),
        f"n train / {rows}": f"{p.get('n_train')} / {p.get('n_heldout')}",
    }
    from interp_heads.report.probe_note import probe_note

    note = probe_note(p, len(manifest.data or p.get("tasks") or []))
    return _table(pd.DataFrame([row])) + (f"<p>{esc(note)}</p>" if note else "")


def damage_table(manifest: Manifest | dict | None) -> str:
    """Each task's damage-matched k (``damage_matched = true``): the largest k of the grid at which
    RandomK keeps 80% of the unmasked score; empty when the run did not ask for it."""
    damage = Manifest.of(manifest).damage_k
    if not isinstance(damage, dict) or not damage:
        return ""
    none = "none (RandomK keeps under 80% at every k)"
    rows = [{"task": t, "damage-matched k": none if k is None else k} for t, k in damage.items()]
    return _table(pd.DataFrame(rows))


def verification_table(manifest: Manifest | dict | None) -> str:
    """Per task: the ranking's verdict against exact mean ablation; flagged tasks are marked."""
    checks = Manifest.of(manifest).verification or {}
    if not checks:
        return _none("verification of the rankings (verify = 0, or a run made without it)")
    rows = []
    for task, v in checks.items():
        if "skipped" in v:
            rows.append({"task": task, "verdict": f"not verified: {v['skipped']}", "flag": ""})
            continue
        rows.append(
            {
                "task": task,
                "verdict": v.get("verdict", ""),
                "top confirmed": f"{v.get('top_confirmed')}/{v.get('m')}",
                "Spearman, random sample": v.get("spearman_sample"),
                "Spearman, all verified": v.get("spearman"),
                "flag": _trust(v),
            }
        )
    return _table(pd.DataFrame(rows))


def _trust(v: dict) -> str:
    """The flag column: what of a ranking the check did not confirm, in words."""
    if str(v.get("verdict", "")).startswith("too few"):
        return "too few heads to decide"
    if not v.get("flag"):
        return "ok"
    m, confirmed, rho = v.get("m") or 0, v.get("top_confirmed") or 0, v.get("spearman")
    weak = ["top set not confirmed"] if confirmed < (m + 1) // 2 else []
    weak += ["order not confirmed"] if rho is None or rho < 0.8 else []  # verify.MIN_SPEARMAN
    return "FLAGGED: " + (" and ".join(weak) or "see the verdict")


def top_heads_table(attribution: pd.DataFrame, task: str, n: int, kinds: dict | None = None) -> str:
    """The ``n`` top-ranked heads of ``task``: rank, head, score, and known kinds (when known)."""
    frame = attribution[attribution.task == task].sort_values("rank").head(n)
    rows = []
    for r in frame.itertuples(index=False):
        row = {"rank": int(r.rank), "head": r.label, "score": f"{r.score:.4g}"}
        if kinds is not None:
            row["known kind"] = ", ".join(kinds.get((int(r.layer), int(r.head)), [])) or ""
        rows.append(row)
    return _table(pd.DataFrame(rows))
