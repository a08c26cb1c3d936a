"""The head explorer: click a head of the layer x head grid, see everything the run knows of it.

For one ranking (a ``HeadScores``), each head's card holds its score with the 95% interval over
the rank examples (``provenance["interval"]``), its rank under the ranking's method, in each
split half (``provenance["split_half"]``) and among the heads whose exact single-head
mean-ablation drop was measured (``provenance["verification"]``), its known-kind scores
(``known_heads.csv``), the stability verdict of the task's ranking, and its attention pattern on
a few prompts (``attention.json``'s ``explore`` record: every head, a few short prompts). A head
lacking a piece says so.

Like CircuitsVis' attention views and Neuronpedia's per-feature pages, but in one offline HTML
fragment without Plotly: the grid is an HTML table, the patterns are tables drawn by a short
script; the data travels as JSON inside ``<script type="application/json">`` with ``<``, ``>``
and ``&`` written as ``\\u003c`` escapes, and the script puts every text in place with
``textContent``, so nothing read from the run becomes markup. :func:`explorer_html` gives the
fragment (the report's attribute page links its Plotly heatmap to it: a click on a cell selects
the head); :class:`Explorer` shows it in a Jupyter cell (``HeadScores.explore()``).
"""

from __future__ import annotations

import itertools
import json

from interp_heads.figures.escape import esc
from interp_heads.heads import head_label

_ids = itertools.count()

STYLE = (
    ".ihx{display:flex;gap:16px;flex-wrap:wrap;font:13px system-ui,sans-serif}"
    ".ihx table.ihx-grid{border-collapse:collapse}.ihx-grid td.ihx-cell{width:18px;height:18px;"
    "border:1px solid #eee;cursor:pointer;padding:0}.ihx-grid td.ihx-sel{outline:2px solid #000}"
    ".ihx-grid th{font-weight:normal;color:#666;padding:0 3px}.ihx-info th{text-align:left;"
    "padding-right:8px;color:#444;vertical-align:top}.ihx-info td{max-width:520px}"
    ".ihx-att table{border-collapse:collapse;margin:4px 8px 8px 0}.ihx-att td{width:11px;"
    "height:11px;padding:0;border:0}.ihx-att th{font:10px monospace;color:#444;padding:0 2px;"
    "white-space:pre;text-align:right}.ihx-att{display:flex;flex-wrap:wrap;gap:12px}"
    ".ihx-att>div{max-width:460px}"
)

SCRIPT = """
window.ihxShow=function(uid,label){
 var root=document.getElementById(uid);if(!root)return;
 var d=JSON.parse(root.querySelector('script.ihx-data').textContent);var h=d.heads[label];if(!h)return;
 root.querySelectorAll('td.ihx-cell').forEach(function(c){
  c.classList.toggle('ihx-sel',c.getAttribute('data-head')===label);});
 var info=root.querySelector('.ihx-info');info.textContent='';
 function row(k,v){var tr=document.createElement('tr'),a=document.createElement('th'),
  b=document.createElement('td');a.textContent=k;b.textContent=v;tr.appendChild(a);
  tr.appendChild(b);info.appendChild(tr);}
 row('head',label);h.lines.forEach(function(p){row(p[0],p[1]);});
 var att=root.querySelector('.ihx-att');att.textContent='';var shown=0;
 (d.attention||[]).forEach(function(pr,i){var pat=pr.patterns[label];if(!pat)return;shown++;
  var box=document.createElement('div'),cap=document.createElement('div');
  cap.textContent='prompt '+(i+1)+' (last '+pr.tokens.length+' tokens): rows query, columns key';
  box.appendChild(cap);var t=document.createElement('table');
  pat.forEach(function(r,q){var tr=document.createElement('tr'),th=document.createElement('th');
   th.textContent=pr.tokens[q];tr.appendChild(th);r.forEach(function(v,k){
    var td=document.createElement('td');td.style.background='rgba(31,119,180,'+v+')';
    td.title=pr.tokens[q]+' -> '+pr.tokens[k]+': '+v;tr.appendChild(td);});t.appendChild(tr);});
  box.appendChild(t);att.appendChild(box);});
 if(!shown){att.textContent=d.no_attention;}
};
"""


def script_json(value) -> str:
    """JSON safe inside ``<script>``: no ``<``, ``>`` or ``&`` left to close the tag."""
    text = json.dumps(value, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _fmt(x, spec: str = ".3g") -> str:
    return "n/a" if x is None or x != x else format(float(x), spec)


def _ranks(values: list[float | None], signed: bool) -> list[int | None]:
    """1 = most important (``|value|`` unless ``signed``); None for a missing value."""
    key = [
        (-(v if signed else abs(v)), i) for i, v in enumerate(values) if v is not None and v == v
    ]
    out: list[int | None] = [None] * len(values)
    for r, (_, i) in enumerate(sorted(key), start=1):
        out[i] = r
    return out


def head_cards(scores, known=None, stability: str = "") -> dict[str, list[tuple[str, str]]]:
    """``{label: [(what, words), ...]}``: every head's card, from the ranking and its provenance
    (``known``: a ``known_heads.csv`` frame; ``stability``: the task's verdict in words)."""
    prov, n_l, n_h = scores.provenance or {}, scores.n_layers, scores.n_heads
    flat = [None if x != x else float(x) for x in scores.scores.flatten().tolist()]
    n_total, signed = len(flat), scores.rank_by == "signed"
    rank = [int(r) for r in scores.rank().flatten().tolist()]
    interval = prov.get("interval") or {}
    lows, highs = (_flat(interval.get(k)) for k in ("low", "high"))
    halves = (prov.get("split_half") or {}).get("scores") or []
    half_flat = [_flat(h) for h in halves[:2]]
    half_ranks = [_ranks(h, signed) for h in half_flat]
    ver = prov.get("verification") or {}
    exact = {r["head"]: r.get("exact") for r in (ver.get("top") or []) + (ver.get("sample") or [])
             if isinstance(r, dict) and "head" in r}  # fmt: skip
    labels = list(exact)
    exact_rank = dict(zip(labels, _ranks([exact[x] for x in labels], True), strict=True))
    kinds = _kinds(known)
    cards = {}
    for i in range(n_total):
        label = head_label(i // n_h, i % n_h)
        lines = [(f"score ({scores.method})", _score_words(flat[i], lows, highs, i, interval))]
        lines.append(("rank", f"{rank[i]} of {n_total} by {scores.method} ({scores.rank_by})"))
        if len(half_ranks) == 2 and len(half_flat[0]) == n_total:
            a, b = (h[i] for h in half_ranks)
            lines.append(("rank in each split half",
                          f"{a or 'n/a'} and {b or 'n/a'} "
                          f"(half scores {_fmt(half_flat[0][i])} and {_fmt(half_flat[1][i])})"))  # fmt: skip
        if label in exact:
            lines.append(("exact single-head ablation",
                          f"drop of log p(answer) {_fmt(exact[label], '.4f')} under mean ablation; "
                          f"rank {exact_rank[label]} of the {len(labels)} heads measured"))  # fmt: skip
        elif ver:
            lines.append(("exact single-head ablation", "not measured for this head"))
        lines.append(("known kinds", kinds.get((i // n_h, i % n_h), "no known-kind scores stored")))
        lines.append(("stability of the task's ranking", stability or "not measured"))
        cards[label] = lines
    assert n_l * n_h == n_total
    return cards


def _flat(grid) -> list[float | None]:
    if not isinstance(grid, list):
        return []
    return [None if v is None else float(v) for row in grid for v in row]


def _score_words(score, lows, highs, i: int, interval: dict) -> str:
    text = _fmt(score, ".4g")
    if i < len(lows) and lows[i] is not None and highs[i] is not None:
        n = interval.get("n_examples")
        text += f", 95% CI [{_fmt(lows[i], '.4g')}, {_fmt(highs[i], '.4g')}] over {n} examples"
    else:
        text += " (no interval stored)"
    return text


def _kinds(known) -> dict[tuple[int, int], str]:
    """``{(layer, head): "induction 0.12, previous-token 0.81 (is one)"}`` from known_heads.csv."""
    if known is None or not len(known):
        return {}
    out: dict[tuple[int, int], list[str]] = {}
    for r in known.itertuples(index=False):
        mark = " (reaches its threshold)" if str(r.is_kind).lower() in ("true", "1") else ""
        words = f"{str(r.kind).replace('_', '-')} {_fmt(r.score)}{mark}"
        out.setdefault((int(r.layer), int(r.head)), []).append(words)
    return {h: ", ".join(w) for h, w in out.items()}


def _shown(token) -> str:
    """A token as a row label: newlines and tabs visible (its text stays text: ``textContent``)."""
    return str(token).replace("\n", "\\n").replace("\t", "\\t")


def _colour(value, limit: float) -> str:
    """Blue for positive, red for negative, stronger with ``|value|`` (clipped at ``limit``)."""
    if value is None or value != value:
        return "#ddd"
    a = min(1.0, abs(value) / limit) if limit > 0 else 0.0
    rgb = "33,102,172" if value >= 0 else "178,24,43"
    return f"rgba({rgb},{a:.3f})"


def explorer_html(
    scores, known=None, attention: dict | None = None, stability: str = "", uid: str = ""
) -> str:
    """The explorer of one ranking as an HTML fragment (its own style and script; no Plotly).

    ``attention``: an ``attention_data`` record (``{"prompts": [{"tokens", "patterns"}]}``),
    e.g. ``attention.json``'s ``explore`` entry; the heads it lacks say so. ``uid``: the
    fragment's element id (letters, digits and ``-``; default: a fresh one)."""
    from interp_heads.figures.heatmaps import colour_limit

    uid = uid if uid and all(c.isalnum() or c == "-" for c in uid) else f"ihx-{next(_ids)}"
    flat = [None if x != x else float(x) for x in scores.scores.flatten().tolist()]
    limit, clipped = colour_limit([x for x in flat if x is not None])
    prompts = [{"tokens": [_shown(t) for t in p.get("tokens", [])], "patterns": p.get("patterns", {})}
               for p in ((attention or {}).get("prompts") or []) if isinstance(p, dict)]  # fmt: skip
    cards = head_cards(scores, known, stability)
    data = {
        "heads": {label: {"lines": [list(x) for x in lines]} for label, lines in cards.items()},
        "attention": prompts,
        "no_attention": "No attention pattern of this head is stored (attention.json's explore "
        "record: written by attribute).",
    }
    rows = []
    for layer in range(scores.n_layers):
        cells = []
        for head in range(scores.n_heads):
            label, v = head_label(layer, head), flat[layer * scores.n_heads + head]
            cells.append(
                f'<td class="ihx-cell" data-head="{esc(label)}" style="background:'
                f'{_colour(v, limit)}" title="{esc(label)}: {esc(_fmt(v, ".4g"))}" '
                f"onclick=\"ihxShow('{uid}',this.getAttribute('data-head'))\"></td>"
            )
        rows.append(f"<tr><th>L{layer}</th>{''.join(cells)}</tr>")
    heads_row = "".join(f"<th>{h}</th>" for h in range(scores.n_heads))
    scale = (f"colours clipped at ±{limit:.3g} (the 99th percentile of |score|; one head dominates)"
             if clipped else f"colours: -{limit:.3g} (red) to +{limit:.3g} (blue)")  # fmt: skip
    first = head_label(*scores.top(1)[0]) if flat and any(x is not None for x in flat) else ""
    title = f"{scores.task}: {scores.method}, click a head"
    return (
        f'<div class="ihx" id="{uid}"><style>{STYLE}</style>'
        f'<script type="application/json" class="ihx-data">{script_json(data)}</script>'
        f'<div><b>{esc(title)}</b><table class="ihx-grid"><tr><th></th>{heads_row}</tr>'
        f'{"".join(rows)}</table><div class="ihx-note">{esc(scale)}</div></div>'
        '<div><table class="ihx-info"></table><div class="ihx-att"></div></div>'
        f"<script>{SCRIPT}ihxShow('{uid}',{script_json(first)});</script></div>"
    )


class Explorer:
    """The head explorer as a notebook cell shows it (``HeadScores.explore()``); ``html`` is the
    fragment, :meth:`save` writes it as one offline page."""

    def __init__(self, html: str):
        self.html = html

    def _repr_html_(self) -> str:
        return self.html

    def save(self, path) -> None:
        """One offline HTML page holding the explorer (through the store's atomic writer)."""
        from interp_heads.store import write_atomic

        write_atomic(
            path,
            f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{self.html}</body></html>",
        )
