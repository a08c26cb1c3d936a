"""Attention patterns of chosen heads on a few prompts: where each head looks, token by token.

:func:`attention_data` runs the model once per prompt with TransformerLens' cache of
``blocks.{l}.attn.hook_pattern`` (only the layers asked for) and keeps each head's pattern over
the prompt's last ``max_tokens`` tokens (queries and keys), with the tokens as text: a small,
JSON-ready record that a run folder stores (``attention.json``), so the report redraws it without
the model. :func:`attention_figure` draws such a record, one heatmap per head, tokens on both axes
(query down, key across), a menu to switch prompts; :func:`attention_patterns` does both, for a
Jupyter cell.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from interp_heads.heads import Head, head_label, parse_heads

MAX_TOKENS = 48  # positions kept per prompt (the last ones: the answer is read from there)
COLS = 3  # heatmaps per row


def attention_data(
    model, prompts: str | Sequence[str], heads: Sequence[Head | str], max_tokens: int = MAX_TOKENS
) -> dict:
    """Each head's attention pattern on each prompt (its last ``max_tokens`` positions).

    Args:
        model: a HookedTransformer (or a bridge with the same hook names).
        prompts: the texts as the model sees them (render chat formats first).
        heads: ``(layer, head)`` pairs or labels such as ``"L3H2"``.
        max_tokens: positions kept at the end of each prompt, queries and keys alike.

    Returns:
        ``{"heads": [label, ...], "prompts": [{"tokens": [...], "n_tokens": n,
        "patterns": {label: [[query][key]]}}]}``, patterns rounded to 4 decimals.
    """
    import torch

    prompts = [prompts] if isinstance(prompts, str) else list(prompts)
    if not prompts:
        raise ValueError("prompts is empty: give at least one prompt")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    heads = parse_heads(list(heads), model.cfg.n_layers, model.cfg.n_heads)
    if not heads:
        raise ValueError("heads is empty: give at least one head, e.g. ['L0H1']")
    names = {f"blocks.{layer}.attn.hook_pattern" for layer, _ in heads}
    out = []
    with torch.no_grad():
        for text in prompts:
            tokens = model.to_tokens(text)
            _, cache = model.run_with_cache(tokens, names_filter=names.__contains__)
            keep = min(max_tokens, tokens.shape[1])
            strs = model.to_str_tokens(tokens[0])[-keep:]
            patterns = {
                head_label(layer, h): [
                    [round(float(x), 4) for x in row]
                    for row in cache[f"blocks.{layer}.attn.hook_pattern"][0, h, -keep:, -keep:]
                    .float()
                    .cpu()
                    .tolist()
                ]
                for layer, h in heads
            }
            out.append(
                {
                    "tokens": [str(s) for s in strs],
                    "n_tokens": int(tokens.shape[1]),
                    "patterns": patterns,
                }  # fmt: skip
            )
    return {"heads": [head_label(*h) for h in heads], "prompts": out}


def attention_figure(data: dict, title: str | None = None) -> go.Figure:
    """Heatmaps of an :func:`attention_data` record: one per head, query rows x key columns with
    the tokens as tick labels, a menu choosing the prompt (the first one shown)."""
    labels, prompts = list(data["heads"]), list(data["prompts"])
    cols = min(COLS, len(labels))
    rows = math.ceil(len(labels) / cols)
    fig = make_subplots(
        rows=rows, cols=cols, subplot_titles=labels, horizontal_spacing=0.12,
        vertical_spacing=0.35 / rows if rows > 1 else 0.0,
    )  # fmt: skip
    for p, rec in enumerate(prompts):
        ticks = [_tick(t) for t in rec["tokens"]]
        for i, label in enumerate(labels):
            fig.add_trace(
                go.Heatmap(
                    z=rec["patterns"][label], zmin=0, zmax=1, colorscale="Blues",
                    showscale=i == 0, visible=p == 0, colorbar={"title": "attention", "len": 0.6},
                    customdata=[[[q, k] for k in ticks] for q in ticks],
                    hovertemplate=f"{label}<br>query %{{customdata[0]}}<br>key %{{customdata[1]}}"
                    "<br>attention %{z:.3f}<extra></extra>",
                ),
                row=i // cols + 1, col=i % cols + 1,
            )  # fmt: skip
    _axes(fig, prompts[0]["tokens"], len(labels))
    n = len(prompts[0]["tokens"])
    size = max(260, min(520, 11 * n + 60))
    fig.update_layout(
        title=title, width=cols * size + 120, height=rows * size + 120,
        margin={"t": 90 if len(prompts) > 1 else 60, "l": 20, "r": 20, "b": 20},
        updatemenus=_menu(prompts, len(labels)) if len(prompts) > 1 else [],
    )  # fmt: skip
    return fig


def attention_patterns(
    model, prompts: str | Sequence[str], heads: Sequence[Head | str], max_tokens: int = MAX_TOKENS
) -> go.Figure:
    """The attention patterns of ``heads`` on ``prompts`` as a figure (for a notebook cell)."""
    return attention_figure(attention_data(model, prompts, heads, max_tokens))


def _tick(token: str) -> str:
    """A token as a tick label: whitespace made visible, long tokens shortened."""
    text = token.replace("\n", "\\n").replace(" ", "\u00b7")
    return text if len(text) <= 12 else text[:11] + "\u2026"


def _axes(fig: go.Figure, tokens: list[str], n_heads: int, layout: dict | None = None) -> dict:
    """Tick every position with its token on each heatmap's axes (numeric positions: repeated
    tokens stay apart); the query axis runs downwards. Returns the layout update."""
    ticks = [_tick(t) for t in tokens]
    update = {}
    for i in range(n_heads):
        suffix = "" if i == 0 else str(i + 1)
        common = {"tickmode": "array", "tickvals": list(range(len(ticks))), "ticktext": ticks,
                  "tickfont": {"size": 9}}  # fmt: skip
        update[f"xaxis{suffix}"] = {**common, "tickangle": -60}
        update[f"yaxis{suffix}"] = {**common, "autorange": "reversed"}
    if layout is None:
        fig.update_layout(update)
    return update


def _menu(prompts: list[dict], n_heads: int) -> list[dict]:
    """A dropdown that shows one prompt's heatmaps and its tokens on the axes."""
    buttons = []
    for p, rec in enumerate(prompts):
        visible = [q == p for q in range(len(prompts)) for _ in range(n_heads)]
        label = "".join(rec["tokens"]).strip().replace("\n", " ")
        label = f"prompt {p + 1}: " + (label if len(label) <= 40 else "\u2026" + label[-39:])
        axes = _axes(go.Figure(), rec["tokens"], n_heads, layout={})
        buttons.append({"label": label, "method": "update", "args": [{"visible": visible}, axes]})
    # above the heatmaps, right-aligned: clear of the title on the left
    return [{"buttons": buttons, "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom",
             "pad": {"b": 30}}]  # fmt: skip
