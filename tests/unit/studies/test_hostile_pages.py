"""Every study page keeps untrusted text inert: rendered as GitHub-like viewers do (markdown-it,
``html=True``, tables on), a page built from hostile names holds exactly the elements and
attributes of the same page built from plain ones, no ``<img``, no ``javascript:`` link, no
heading of their own, no ``<img`` but the tool's figures, and the hostile text is still on the
page as text.

Each page's builder is called directly on small synthetic run data in which every value a run
folder or a user supplies (task names, folder and file names, labels, head labels, method and
rule names read from files, the git field of a manifest) is the hostile string, once, and once
the plain words ``plain word``; the two renderings are compared element for element (the independent
reference: the tool's own markup, which a plain word cannot change)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

HOSTILE = "x`<img src=x onerror=alert(1)>|\n# heading [l](javascript:alert(1)) *b* _i_"
PLAIN = "plain word"  # not an identifier: shown as text, as a hostile name is (md_code)


def render(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def _elements(html: str) -> list[tuple[str, tuple[str, ...]]]:
    """Every opening tag with its attribute names, in order."""
    found = re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)((?:\s[^>]*)?)>", html)
    return [(tag, tuple(re.findall(r"([a-zA-Z-]+)=", attrs))) for tag, attrs in found]


def check(build) -> str:
    """``build(name)`` -> page text, for the hostile and the plain name: the hostile page's
    rendering has the plain one's elements and keeps the hostile text visible."""
    hostile, plain = render(build(HOSTILE)), render(build(PLAIN))
    assert hostile.count("<img") == plain.count("<img"), hostile  # a figure of the tool's only
    assert not re.search(r"<[a-zA-Z][^>]*\sonerror=", hostile), hostile
    assert "javascript:" not in "".join(re.findall(r'href="([^"]*)"', hostile)), hostile
    assert _elements(hostile) == _elements(plain), hostile
    assert "onerror=alert(1)" in hostile  # shown, as text (``&lt;img src=x onerror=...``)
    assert "javascript:alert(1)" in hostile
    return hostile


# --------------------------------------------------------------------------- heads
def _heads_inputs(tmp: Path, name: str):
    from interp_heads.attribution import HeadScores
    from interp_heads.choices import BASELINE
    from interp_heads.studies.heads.page import SELS

    run = tmp / f"run{name}"
    store = run / "heads"
    store.mkdir(parents=True)
    tasks = [name, f"b{name}"]
    heads = [(layer, head) for layer in range(4) for head in range(8)]
    rankings = {t: heads[i:] + heads[:i] for i, t in enumerate(tasks)}
    rows = [dict(task=t, metric="accuracy", selection=BASELINE, k=0, mean=0.9, ci_low=0.8,
                 ci_high=1.0) for t in tasks]  # fmt: skip
    rows += [dict(task=t, metric="accuracy", selection=s, k=2, mean=0.5, ci_low=0.4, ci_high=0.6)
             for t in tasks for s in SELS[1:]]  # fmt: skip
    pd.DataFrame(rows).to_parquet(run / "summary.parquet")
    pd.DataFrame([dict(k=2, source=s, task=t, drop=0.1, ci_low=0.0, ci_high=0.2)
                  for s in tasks for t in tasks]).to_csv(store / "specificity.csv", index=False)  # fmt: skip
    pd.DataFrame([dict(task=t, n_examples=8, n_half=4, k=2, jaccard=0.5, shared=1, spearman=0.2,
                       unstable=True) for t in tasks]).to_csv(store / "stability.csv", index=False)  # fmt: skip
    (run / "known_heads.json").write_text("{}")  # present: the section reads inp.known()
    manifest = {
        "model": {"n_layers": 4, "n_heads": 8}, "git": name, "ks": [2],
        "config": {"model": name, "attribution": name, "n_rank": 4, "ablation": name, "n_eval": 8},
        "stability": {t: {"n_examples": 8, "n_half": [4, 4], "jaccard": {"2": 0.5},
                          "unstable": [2], "shared": {"2": 1}, "spearman": 0.3} for t in tasks},
    }  # fmt: skip
    scores = {"induction": HeadScores(torch.full((4, 8), 0.5), "induction", name)}
    return SimpleNamespace(
        run=run, retrieval_run=tmp / f"retrieval{name}", manifest=manifest, rankings=rankings,
        known_path=run / "known_heads.json", retrieval_path=tmp / f"r{name}" / "retrieval.json",
        known=lambda: scores,
    ), store  # fmt: skip


def test_the_heads_page_and_its_results_section(tmp_path, monkeypatch):
    import interp_heads.report
    from interp_heads.studies.heads.page import write_page
    from interp_heads.studies.heads.results import results_block

    monkeypatch.setattr(interp_heads.report, "build_report", lambda run: None)  # index.html

    def build(name):
        inp, store = _heads_inputs(tmp_path / str(len(name)), name)
        out = tmp_path / f"heads{len(name)}.md"
        write_page(inp, store, out)
        return out.read_text() + "\n\n" + results_block(inp, store)

    check(build)


# --------------------------------------------------------------------------- sufficiency
def _sufficiency_run(name: str) -> dict:
    summary = pd.DataFrame([
        dict(task=name, metric="accuracy", curve="ranking", measure="minimal_k", value=2.0,
             low=2.0, high=4.0, heads=f"L1H2,{name}", found=True, tested=8, n_examples=12),
        dict(task=name, metric="accuracy", curve="random", measure="minimal_k", value=8.0,
             low=8.0, high=8.0, heads="", found=False, tested=8, n_examples=12),
        dict(task=name, metric=name, curve="ranking", measure="cpr", value=0.7, low=0.6,
             high=0.8, heads="", found=None, tested=None, n_examples=12),
        dict(task=f"b{name}", metric="accuracy", curve="ranking", measure="minimal_k", value=8.0,
             low=8.0, high=8.0, heads="", found=False, tested=8, n_examples=12),
    ])  # fmt: skip
    curves = pd.DataFrame([
        dict(task=t, metric=m, curve=c, k=2, f=0.5, f_low=0.4, f_high=0.6, full=0.9, empty=0.1,
             run_k=True, n_examples=12)
        for t in (name, f"b{name}") for m in ("accuracy", name)
        for c in ("ranking", "random", "necessity")
    ])  # fmt: skip
    searched = pd.DataFrame([dict(task=name, set="found", k=3, n_total=8, status=name)])
    return {
        "sufficiency": summary, "sufficiency_curves": curves, "sufficient_sets": searched,
        "sufficiency_verdicts": pd.DataFrame({"sentence": [f"{name} is necessary"]}),
        "manifest": {"config": {"attribution": name, "ablation": name},
                     "sufficiency": {"seeds": 2, "ks": [2, 8]}},
    }  # fmt: skip


def test_the_sufficiency_section(tmp_path):
    from interp_heads.studies.sufficiency import render

    check(lambda name: render(tmp_path / f"s{name}", _sufficiency_run(name), f"figures/{name}.svg"))


# --------------------------------------------------------------------------- sufficient_sets
def test_the_sufficient_sets_page(tmp_path, monkeypatch):
    import interp_heads
    from interp_heads.studies.sufficient_sets import ABLATIONS, SufficientSets

    def fake_run(name):
        sets = pd.DataFrame([
            dict(task=t, set=s, metric=m, k=3, n_total=8, f=0.95, f_low=0.9, f_high=1.0,
                 mean=0.5, n_examples=6, n_draws=2, ranking=name, status=st, status_reason=name,
                 patience=8, one_minimal=True, sizes_resampled="")
            for t, st in ((name, "found"), (f"b{name}", name)) for s in ("found", name)
            for m in ("answer_logprob", "kl_unmasked")
        ])  # fmt: skip
        verdicts = pd.DataFrame([dict(task=name, k=2, masked_f=0.3, necessary=True, kept_f=0.9,
                                      kept_mean=0.8, unmasked=0.9, sufficient=True)])  # fmt: skip
        return {"sufficient_sets": sets, "sufficiency_verdicts": verdicts,
                "manifest": {"config": {"attribution": name}}}  # fmt: skip

    def build(name):
        monkeypatch.setattr(interp_heads, "load_run", lambda folder: fake_run(name))
        docs = tmp_path / f"docs{len(name)}"
        folders = {f"sufficient_sets/{a}": tmp_path / a for a in ABLATIONS}
        (page,) = SufficientSets().write_pages(folders, docs)
        return page.read_text()

    check(build)


# --------------------------------------------------------------------------- head_sets
def test_the_head_sets_page(monkeypatch):
    from interp_heads.studies.head_sets import REFERENCE
    from interp_heads.studies.head_sets import page as head_sets_page

    def build(name):
        found = [
            {"task": t, "method": m, "n_rank": 8, "n_eval": 10, "rank_seconds": 1.0,
             "accuracy_cpr": 0.5, "spearman": 0.3, "cpr_gap": 0.1, "minimal_k_steps": 1,
             "f_accuracy_k2": 0.5, "f_answer_logprob_k2": 0.4}
            for t in (name, f"b{name}") for m in (REFERENCE, "ablation_atp", name)
        ]  # fmt: skip
        monkeypatch.setattr(head_sets_page, "rows", lambda folders, ref: (found, [2, 8], [2]))
        skipped = {(name, "retrieval_score"): f"because {name}"}
        return head_sets_page.page({"a": Path(name)}, REFERENCE, skipped, 1.0)

    check(build)


# --------------------------------------------------------------------------- plain_control
def test_the_plain_control_page(tmp_path, monkeypatch):
    from interp_heads.studies import plain_control

    def build(name):
        tasks = [name, f"b{name}"]
        frame = pd.DataFrame([dict(task=t, k=k, draws=3, randomk_accuracy=0.5, top8_held=1.0,
                                   top16_held=2.0, topk_accuracy=0.3)
                              for t in tasks for k in (2, 4)])  # fmt: skip
        corr = pd.DataFrame({"all_k": [0.5, float("nan")], "within_k": [-0.2, 0.1]}, index=tasks)
        monkeypatch.setattr(plain_control, "table", lambda run_dir: (frame, corr))
        run = tmp_path / f"pc{len(name)}"
        run.mkdir()
        (run / "manifest.json").write_text(json.dumps({"timings": {"total": 60}}))
        return plain_control.page(run)

    check(build)


# --------------------------------------------------------------------------- ground_truth
def _ground_truth_tables(name: str) -> dict:
    models = [name, f"b{name}"]
    t = {
        "model": pd.DataFrame([dict(model=m, task=name, n_layers=2, n_heads_per_layer=2,
                                    truth_seconds=1.0) for m in models]),
        "truth": pd.DataFrame([dict(model=m, kind=k, min_size=2, minimum_sets=f"L0H0,{name} | x",
                                    minimum_f=0.95, n_prompts=8, n_heads=4, necessary=name)
                               for m in models for k in ("mean", name)]),
        "methods": pd.DataFrame([dict(model=m, kind=k, method=meth, roc_auc=0.8, error=err)
                                 for m in models for k in ("mean", name)
                                 for meth, err in (("atp", ""), (name, ""), (f"e{name}", name))]),
        "search": pd.DataFrame([dict(model=m, kind=k, found_size=2, heads_over=0,
                                     one_minimal=True, error="")
                                for m in models for k in ("mean", name)]),
    }  # fmt: skip
    info = {"held_out_accuracy": 1.0, "train_seconds": 2.0, "weights_sha256": "ab" * 32}
    models_entry = {m: dict(info) for m in models} | {f"c{name}": {"refused": name}}
    t["manifest"] = {"size": name, "seconds": 60.0, "models": models_entry}
    return t


def test_the_ground_truth_page(tmp_path, monkeypatch):
    from interp_heads.figures import static
    from interp_heads.studies.ground_truth import page as ground_truth_page

    def no_figure(*args, **kwargs):
        raise static.StaticExportError("no figure in this test")

    monkeypatch.setattr(static, "write_static", no_figure)

    def build(name):
        monkeypatch.setattr(ground_truth_page, "read_tables", lambda f: _ground_truth_tables(name))
        cal = tmp_path / f"cal{len(name)}.json"
        rows = [dict(rule=name, n=24, draws=5, kind="null", fpr=0.05),
                dict(rule=name, n=24, draws=5, kind="power", effect=1.0, power=0.9)]  # fmt: skip
        cal.write_text(json.dumps({"rows": rows}))
        docs = tmp_path / f"docs{len(name)}"
        (page,) = ground_truth_page.write_page(tmp_path / f"gt{name}", docs, cal)
        return page.read_text()

    check(build)


@pytest.mark.parametrize(
    "text",
    [HOSTILE, "`", "|", "\n# heading", "[l](javascript:alert(1))", "0.3 < 0.9",
     "<<img src=x onerror=alert(1)>", "< img src=x>", "> quote", "<https://x.y>"],
)  # fmt: skip
def test_each_hostile_piece_alone_keeps_the_claim_of_md(text):
    """The pieces one at a time, through ``md`` in a table cell and a list item (the two places
    the pages put a name): the plain word's elements."""
    from interp_heads.figures.escape import md

    for where in ("| a |\n|---|\n| {} |", "- {}: x"):
        assert _elements(render(where.format(md(text)))) == _elements(render(where.format("w")))
