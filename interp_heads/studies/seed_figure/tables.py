"""The tables of docs/results.md (``studies.seed_figure``): the claim at one k, the k grid of
each metric, the setup. Every number comes from a run folder's tables; the claim's verdict is
``sweep.verdict``'s rule (Holm over the claim table's cells decides), the Cognitive Mirrors
figure's drop ratio (:data:`CLAIM_RATIO`) a secondary reading beside it."""

from __future__ import annotations

import pandas as pd

from interp_heads.figures.escape import md as _text  # the user's text, inert in a page
from interp_heads.run import Run
from interp_heads.run.manifest import Manifest
from interp_heads.studies.base import run_minutes
from interp_heads.sweep import stats
from interp_heads.sweep import verdict as rule
from interp_heads.sweep.inference import holm
from interp_heads.sweep.verdict import CLAIM_RATIO  # noqa: F401 (the page's wording reads it)


def claim_rows(r: dict, k: int) -> list[dict]:
    """One row per task at ``k``: the means with their intervals, the drops, TopK - RandomK with
    its interval and p, and the verdict (``sweep.verdict.collapse``, Holm over these rows)."""
    s, sig = r["summary"], r["sig"]
    acc = s[s.metric == "accuracy"]
    cells = []
    for task in dict.fromkeys(acc.task):
        cell = acc[(acc.task == task) & (acc.k == k)].set_index("selection")
        row = sig[
            (sig.task == task)
            & (sig.k == k)
            & (sig.metric == "accuracy")
            & (sig.control == "RandomK")
        ]
        if "TopK" not in cell.index or "RandomK" not in cell.index or row.empty:
            continue
        cells.append((task, cell.loc["TopK"], cell.loc["RandomK"], row.iloc[0]))
    adj = holm([g.p_value for *_, g in cells])
    cal = rule.load_calibration()
    out = []
    for (task, t, rnd, g), p_holm in zip(cells, adj, strict=True):
        few = stats.too_few(g.n_examples, g.n_draws)
        said = rule.collapse(g["diff"], p_holm, g.n_examples, g.n_draws)
        out.append({
            "task": task, "k": k,
            "unmasked": f"{g.baseline:.2f}",
            "TopK": f"{t['mean']:.2f} [{t.ci_low:.2f}, {t.ci_high:.2f}]",
            "RandomK": f"{rnd['mean']:.2f} [{rnd.ci_low:.2f}, {rnd.ci_high:.2f}]",
            "TopK drop": f"{g.top_drop:.2f}", "RandomK drop": f"{g.control_drop:.2f}",
            "ratio": " ".join(filter(None, (stats.drops_text(g.top_drop, g.control_drop),
                                            f"({rule.ratio_reading(g.top_drop, g.control_drop)})"))),
            "TopK - RandomK [95% CI], p": f"{g['diff']:+.2f} [{g.diff_low:+.2f}, {g.diff_high:+.2f}]"
            + ("" if few else f", {p_phrase(g.p_value)}, Holm {p_phrase(p_holm)}"),
            "claim holds": said if rule.is_yes(said) or not rule.is_decided(said) else "**no**",
            "rule's error rates": rule.error_rates(g.n_examples, g.n_draws, calibration=cal),
        })  # fmt: skip
    return out


def grid_table(r: dict, metric: str) -> pd.DataFrame:
    s = r["summary"]
    s = s[(s.metric == metric) & (s.selection != "baseline")]
    sig = r["sig"]
    rows = sig[(sig.metric == metric) & (sig.control == "RandomK")]
    marked = {(r.task, int(r.k)) for r in rows.itertuples() if stats.decided(r)}
    s = s.assign(
        cell=[
            f"{m:.2f} [{lo:.2f}, {hi:.2f}]"
            + (" *" if sel == "TopK" and (t, int(k)) in marked else "")
            for m, lo, hi, sel, t, k in zip(
                s["mean"], s.ci_low, s.ci_high, s.selection, s.task, s.k, strict=True
            )
        ]
    )
    wide = s.pivot_table(
        index=["task", "k"], columns="selection", values="cell", aggfunc="first"
    ).reset_index()
    wide.columns.name = None
    order = {t: i for i, t in enumerate(dict.fromkeys(s.task))}
    return wide.sort_values(["task", "k"], key=lambda c: c.map(order) if c.name == "task" else c)


def md(frame: pd.DataFrame | list[dict]) -> str:
    """``frame`` as a Markdown table; its task names (the user's text) as inert text."""
    frame = pd.DataFrame(frame)
    if frame.empty:
        return "(no rows: the run has no TopK and RandomK at this k)"
    if "task" in frame:
        frame = frame.assign(task=frame.task.map(_text))
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = [
        "| " + " | ".join("" if v != v else str(v) for v in row) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join([head, rule, *body])


def _exact_note(r: dict) -> str:
    """The layers ablation_atp scored exactly, as its attribution entries record them."""
    if Manifest.of(r["manifest"]).config["attribution"] != "ablation_atp":
        return ""
    entries = sorted((r["dir"] / "attribution").glob("*.json"))
    ns = {Run.scores_entry(p).provenance.get("exact_layers") or 0 for p in entries}
    if len(ns) != 1:
        return f" (exact layers per task: {sorted(ns)})"
    n = ns.pop()
    if not n:
        return " (first-order estimate only)"
    layers = "layer 0" if n == 1 else f"layers 0-{n - 1}"
    return f" (heads of {layers}: their exact mean-ablation drop)"


def setup_table(r: dict) -> str:
    m = Manifest.of(r["manifest"])
    c = m.config
    n_heads = m.model["n_layers"] * m.model["n_heads"]
    rows = [
        ("model", f"{_text(c['model'])} ({m.model['n_layers']} layers x {m.model['n_heads']} heads = {n_heads} heads)"),
        ("tasks", ", ".join(map(_text, c["tasks"]))),
        ("prompt format", ", ".join(f"{_text(t)}: {f}" for t, f in (m.fmt or {}).items()) if isinstance(m.fmt, dict) else str(m.fmt)),
        ("attribution", f"{c['attribution']}{_exact_note(r)} on the first {c['n_rank']} correctly answered examples per task"),
        ("evaluation", f"up to {c['n_eval']} further correctly answered examples per task (disjoint from the rank set)"),
        ("ablation", f"{c['ablation']} on hook_z"),
        (
            "selections",
            ", ".join(c["selections"])
            + f"; {c['seeds']} random draws per k"
            + (
                "; RandomK draws from the heads outside TopK of the same k (`exclude_top`)"
                if c.get("exclude_top")
                else "; RandomK draws from all heads"
            ),
        ),
        ("ks", ", ".join(map(str, m.ks)) + " (" + ", ".join(f"{k / n_heads:.1%}" for k in m.ks) + " of the heads)"),
        ("metrics", "; ".join((m.metrics or {}).values())),
        ("greedy generation", f"at most {c['max_new_tokens']} new tokens, stopped at the end of the first line"),
        ("run time", run_time(m)),
        ("commit", str(m.git)),
    ]  # fmt: skip
    return md(pd.DataFrame(rows, columns=["item", "value"]))


def run_time(manifest: Manifest | dict) -> str:
    """The run's compute time, summed over the invocations a resumed run took."""
    (total, calls), (sweep, _) = run_minutes(manifest), run_minutes(manifest, "sweep")
    if total is None:
        return "not timed"
    out = f"{total:.1f} min" + (f" (sweep {sweep:.1f} min)" if sweep is not None else "")
    return out + (f", over {calls} invocations (resumed)" if calls > 1 else "")


def p_phrase(p: float) -> str:
    """``p < 0.001`` or ``p = 0.149``: the p-value as a sentence reads it."""
    text = stats.format_p(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"
