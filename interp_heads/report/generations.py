"""The report's table of generations under masking: every evaluated example of every task.

One table per task, one row per evaluated example: the prompt as the model saw it
(``prompts.jsonl``; the task's ``question`` field for folders written before it existed), the
reference, and the answers of the unmasked model, of TopK and of RandomK (its first draw), each
marked correct or not by the run's correctness metric (accuracy, else the Cognitive Mirrors
rule). A k selector switches the masked answers between the run's k values, a second selector
keeps the rows where TopK is wrong, right, or changed the answer, and a text box filters rows by
what they say. Without JavaScript the table shows the default k and every row.
"""

from __future__ import annotations

import pandas as pd

from interp_heads.choices import BASELINE
from interp_heads.figures.escape import esc
from interp_heads.interventions.selections import RandomK, TopK
from interp_heads.store.names import safe_name

TOPK, RANDOMK = TopK.display, RandomK.display

CORRECTNESS = ("accuracy", "bleu_rouge_cosine")  # metrics whose value says right (1) or wrong (0)
PREVIEW = 70  # characters of a prompt shown before it is opened

SCRIPT = """<script>function ihGens(el){var box=el.closest('.gens');
var k=box.querySelector('.ih-k').value,show=box.querySelector('.ih-show').value,
q=box.querySelector('.ih-q').value.toLowerCase();
box.querySelectorAll('.ih-ans').forEach(function(s){s.style.display=s.dataset.k===k?'':'none'});
box.querySelectorAll('tbody tr').forEach(function(r){var t=r.dataset['t'+k],c=r.dataset['c'+k];
var ok=show==='all'||(show==='wrong'&&t==='0')||(show==='right'&&t==='1')||(show==='changed'&&c==='1');
r.style.display=ok&&(!q||r.textContent.toLowerCase().indexOf(q)>=0)?'':'none'});}</script>"""
CSS = (
    ".gens .ok{color:#1a7f37;font-weight:bold}.gens .bad{color:#cf222e;font-weight:bold}"
    ".gens summary{cursor:pointer}.gens pre{max-height:240px;white-space:pre-wrap;margin:4px 0}"
    ".gens .ctl{margin:6px 0;font-size:13px}.gens .ctl>*{margin-right:12px}"
)


def default_k(ks: list[int]) -> int:
    """The k shown first: 32 when the run has it (the study's literal k), else the middle one."""
    return 32 if 32 in ks else ks[len(ks) // 2]


def generations_section(
    gens: pd.DataFrame | None, records: pd.DataFrame | None, prompts: pd.DataFrame | None
) -> str:
    """The section's HTML: a note, the script, and one filterable table per task ("" without
    generations)."""
    if gens is None or gens.empty:
        return ""
    parts = [
        "<h2>Example generations under masking</h2>",
        '<p class="note">Every evaluated example: the prompt as the model saw it (click to '
        "open), the reference, and the answers unmasked, with the TopK heads masked and with "
        "RandomK's first draw of heads masked, marked <span class='ok'>&#10003;</span> correct "
        "or <span class='bad'>&#10007;</span> wrong. Choose k and which rows to show.</p>",
        f"<style>{CSS}</style>{SCRIPT}",
    ]
    for task, g in gens.groupby("task", sort=False):
        parts.append(_task_table(str(task), g, records, prompts))
    return "\n".join(parts)


def _correct(records: pd.DataFrame | None, task: str) -> dict:
    """``{(selection, k, seed, example_id): True/False}`` from the run's correctness metric."""
    if records is None or records.empty:
        return {}
    rec = records[records.task == task]
    metric = next((m for m in CORRECTNESS if m in set(rec.metric)), None)
    if metric is None:
        return {}
    rec = rec[rec.metric == metric]
    return {
        (s, int(k), int(seed), str(ex)): float(v) >= 0.5
        for s, k, seed, ex, v in zip(
            rec.selection, rec.k, rec.seed, rec.example_id, rec.value, strict=True
        )
    }


def _task_table(task: str, g: pd.DataFrame, records, prompts) -> str:
    ks = sorted(int(k) for k in g.k.unique() if int(k) > 0)
    if not ks:
        return ""
    shown = default_k(ks)
    ok = _correct(records, task)
    answer = {(s, int(k), int(seed), str(ex)): str(a or "")
              for s, k, seed, ex, a in zip(g.selection, g.k, g.seed, g.example_id, g.generation,
                                           strict=True)}  # fmt: skip
    seed0 = {
        s: int(g[g.selection == s].seed.min()) for s in (TOPK, RANDOMK) if (g.selection == s).any()
    }
    said = _prompts(prompts, task, g)
    base = g[g.selection == BASELINE].drop_duplicates("example_id")
    ids = [str(e) for e in (base.example_id if len(base) else dict.fromkeys(g.example_id))]
    refs = dict(
        zip(base.example_id.astype(str), base.get("answer", pd.Series(dtype=str)), strict=False)
    )
    rows = []
    for ex in ids:
        data, cells = [], []
        unmasked = answer.get((BASELINE, 0, 0, ex), "")
        for sel in (TOPK, RANDOMK):
            if sel not in seed0:
                continue
            spans = []
            for k in ks:
                key = (sel, k, seed0[sel], ex)
                spans.append(_answer(answer.get(key, ""), ok.get(key), k, k == shown))
                if sel == TOPK:
                    mark = ok.get(key)
                    data.append(f'data-t{k}="{"" if mark is None else int(mark)}"')
                    data.append(f'data-c{k}="{int(answer.get(key, "") != unmasked)}"')
            cells.append("<td>" + "".join(spans) + "</td>")
        prompt = said.get(ex, "")
        rows.append(
            f"<tr {' '.join(data)}><td>{esc(ex)}</td><td>{_prompt_cell(prompt)}</td>"
            f"<td>{esc(str(refs.get(ex, '') or ''))}</td>"
            f"<td>{_mark(unmasked, ok.get((BASELINE, 0, 0, ex)))}</td>{''.join(cells)}</tr>"
        )
    heads = ["id", "prompt (as the model saw it)", "reference", "unmasked"]
    heads += [
        f"{sel} ({'heads masked' if sel == TOPK else f'draw {seed0[sel]}'})"
        for sel in (TOPK, RANDOMK)
        if sel in seed0
    ]
    options = "".join(
        f'<option value="{k}"{" selected" * (k == shown)}>k = {k}</option>' for k in ks
    )
    controls = (
        f"<div class='ctl'><label>masked heads <select class='ih-k' onchange='ihGens(this)'>{options}"
        "</select></label><label>rows <select class='ih-show' onchange='ihGens(this)'>"
        "<option value='all'>all</option><option value='wrong'>TopK wrong</option>"
        "<option value='right'>TopK right</option><option value='changed'>TopK changed the "
        "answer</option></select></label><input class='ih-q' type='search' "
        "placeholder='filter rows by text' oninput='ihGens(this)'></div>"
    )
    head = "".join(f"<th>{esc(h)}</th>" for h in heads)
    return (
        f"<div class='gens' id='gens-{safe_name(task)}'><h3>{esc(task)} "
        f"({len(ids)} examples)</h3>{controls}<table><thead><tr>{head}</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )


def _prompts(prompts: pd.DataFrame | None, task: str, g: pd.DataFrame) -> dict[str, str]:
    """Each example's prompt as the model saw it; the ``question`` field for older folders."""
    if prompts is not None and len(prompts) and "prompt" in prompts.columns:
        p = prompts[prompts.task == task]
        if len(p):
            return dict(zip(p.example_id.astype(str), p.prompt.astype(str), strict=True))
    if "question" not in g.columns:
        return {}
    first = g.drop_duplicates("example_id")
    return dict(zip(first.example_id.astype(str), first.question.astype(str), strict=True))


def _prompt_cell(prompt: str) -> str:
    short = prompt.strip().replace("\n", " ")
    short = short if len(short) <= PREVIEW else short[:PREVIEW] + "..."
    return f"<details><summary>{esc(short)}</summary><pre>{esc(prompt)}</pre></details>"


def _mark(text: str, correct: bool | None) -> str:
    sign = (
        ""
        if correct is None
        else (
            "<span class='ok'>&#10003;</span> " if correct else "<span class='bad'>&#10007;</span> "
        )
    )
    return sign + esc(text, newlines=True)


def _answer(text: str, correct: bool | None, k: int, shown: bool) -> str:
    hidden = "" if shown else " style='display:none'"
    return f"<span class='ih-ans' data-k='{k}'{hidden}>{_mark(text, correct)}</span>"
