"""Cross-task specificity: does masking task A's TopK collapse task B too?

A collapse of the task whose heads are masked, with RandomK intact, shows that *some* heads matter;
it cannot tell heads of this task from heads every task needs. Here each source task A's TopK
(each k) is masked while every task B is evaluated: the task x task matrix of accuracy drops
(unmasked minus masked, paired over B's examples, 95% bootstrap CI). A diagonal that dominates its
column says the heads are the task's own; a flat row says they are heads every task needs.
Each source is one ordinary sweep (``run_sweep`` with A's ranking given to every task), so it is
stored and resumed like any sweep. :func:`shared_heads` lists the heads in every task's TopK.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from interp_heads.choices import BASELINE
from interp_heads.interventions.selections import ranked_heads


def cross_task_records(model, tasks: Mapping, rankings: Mapping, config, out_dirs, **sweep_kw):
    """Per-example records of TopK(A) on every task B: the sweep's records plus column ``source``.

    ``out_dirs``: each source task's sweep folder (``{source: path}``, or a function of the
    source), so each source is an ordinary resumable sweep.
    """
    from interp_heads.sweep.loop import run_sweep

    config = replace(config, selections=["topk"], seeds=1)
    frames = []
    for source, ranking in rankings.items():
        result = run_sweep(
            model,
            tasks,
            {name: ranking for name in tasks},
            config,
            out_dir=out_dirs(source) if callable(out_dirs) else out_dirs[source],
            progress=False,
            **sweep_kw,
        )
        frames.append(result.records.assign(source=source))
    return pd.concat(frames, ignore_index=True)


def drop_matrix(
    records: pd.DataFrame, metric: str = "accuracy", n_boot: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """One row per source, task and k: the drop (unmasked minus masked), its 95% CI, n."""
    rec = records[records.metric == metric]
    rng = np.random.default_rng(seed)
    rows = []
    for (source, task), grp in rec.groupby(["source", "task"], sort=False):
        base = grp[grp.selection == BASELINE].groupby("example_id")["value"].mean()
        for k, sub in grp[grp.selection != BASELINE].groupby("k"):
            masked = sub.groupby("example_id")["value"].mean()
            ids = [i for i in masked.index if i in base.index]
            diff = base[ids].to_numpy(float) - masked[ids].to_numpy(float)
            boot = diff[rng.integers(len(diff), size=(n_boot, len(diff)))].mean(1)
            lo, hi = np.percentile(boot, [2.5, 97.5])
            rows.append(
                {"source": source, "task": task, "k": int(k), "drop": float(diff.mean()),
                 "ci_low": float(lo), "ci_high": float(hi), "n": len(ids)}
            )  # fmt: skip
    return pd.DataFrame(rows)


def shared_heads(rankings: Mapping, k: int) -> list[tuple[int, int]]:
    """Heads in the top k of every ranking, in the first ranking's order."""
    orders = [ranked_heads(r)[:k] for r in rankings.values()]
    common = set(orders[0]).intersection(*map(set, orders[1:]))
    return [h for h in orders[0] if h in common]


def exclusivity(rankings: Mapping, ks: Sequence[int]) -> pd.DataFrame:
    """Per task and k: heads shared by all tasks' top k, heads in no other task's top k, layer 0."""
    rows = []
    for k in ks:
        tops = {name: set(ranked_heads(r)[:k]) for name, r in rankings.items()}
        common = set.intersection(*tops.values())
        for name, top in tops.items():
            others = set().union(*(t for n, t in tops.items() if n != name))
            rows.append(
                {"task": name, "k": k, "shared_by_all": len(top & common),
                 "exclusive": len(top - others), "layer0": sum(1 for layer, _ in top if layer == 0)}
            )  # fmt: skip
    return pd.DataFrame(rows)


def drop_heatmap(matrix: pd.DataFrame, k: int, title: str | None = None):
    """Source x task heatmap of the accuracy drops at ``k`` (CI in the hover)."""
    import plotly.graph_objects as go

    sub = matrix[matrix.k == k]
    z = sub.pivot(index="source", columns="task", values="drop")
    lo = sub.pivot(index="source", columns="task", values="ci_low").loc[z.index, z.columns]
    hi = sub.pivot(index="source", columns="task", values="ci_high").loc[z.index, z.columns]
    text = [[f"{v:.2f}" for v in row] for row in z.values]
    custom = np.dstack([lo.values, hi.values]).tolist()
    fig = go.Figure(
        go.Heatmap(
            z=z.values.tolist(), x=list(z.columns), y=list(z.index), text=text,
            texttemplate="%{text}", customdata=custom, colorscale="Reds", zmin=0,
            hovertemplate="mask TopK of %{y}, evaluate %{x}<br>drop=%{z:.3f} "
            "[%{customdata[0]:.3f}, %{customdata[1]:.3f}]<extra></extra>",
        )
    )  # fmt: skip
    fig.update_layout(
        title=title or f"Accuracy drop when masking one task's TopK (k={k})",
        xaxis_title="evaluated task",
        yaxis_title="masked: TopK of",
    )
    return fig
