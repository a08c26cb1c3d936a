"""``sufficiency = true`` in a run: the step, its tables, the page's section, the digest rule."""

from __future__ import annotations

import json
import warnings

import pandas as pd

from interp_heads.pipeline.experiment import RunConfig, plan_steps, run_pipeline
from interp_heads.report.run import load_run
from tests.helpers import DATA


def _quiet_run(cfg, folder, **kw) -> None:
    """``run_pipeline`` with its warnings silenced (the tiny random model's low baselines)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_pipeline(cfg, folder, quiet=True, **kw)


def _cfg(**over) -> RunConfig:
    d = {
        "model": "tiny", "tasks": [str(DATA / "tiny_echo.jsonl")], "n_rank": 4, "n_eval": 6,
        "ks": [2], "selections": ["topk", "randomk"], "seeds": 2, "metrics": ["accuracy"],
        "max_new_tokens": 3, "batch_size": 8, "filter_correct": False, "attribution": "atp",
    }  # fmt: skip
    d.update(over)
    return RunConfig.from_dict(d)


def _search_cfg() -> RunConfig:
    """A run with the search, 2 resamples and a target the tiny model reaches."""
    return _cfg(sufficiency=True, sufficiency_search=True, sufficiency_target=0.5,
                sufficiency_step=0.25, sufficiency_metrics=["accuracy", "answer_logprob"],
                sufficiency_resamples=2)  # fmt: skip


def test_switch_is_one_key_and_leaves_default_digests_alone():
    plain = _cfg()
    assert "sufficiency" not in plan_steps(plain)
    on = _cfg(sufficiency=True)
    assert plan_steps(on)[-2:] == ["sufficiency", "report"]
    assert on.digest() != plain.digest()
    assert _cfg(sufficiency=False, sufficiency_seeds=3).digest() == plain.digest()
    search = _cfg(sufficiency=True, sufficiency_search=False, sufficiency_target=0.9)
    assert search.digest() == on.digest()


def test_search_is_an_option_of_sufficiency_and_needs_rank_examples():
    import pytest

    from interp_heads.errors import PipelineError

    with pytest.raises(PipelineError, match="sufficiency_search is an option of sufficiency"):
        _cfg(sufficiency_search=True)
    with pytest.raises(PipelineError, match="ablates with one of .*, not 'zero'"):
        _cfg(sufficiency=True, sufficiency_search=True, ablation="zero")
    with pytest.raises(PipelineError, match="sufficiency_search_ablation is an option of"):
        _cfg(sufficiency=True, sufficiency_search_ablation="counterfactual")
    with pytest.raises(PipelineError, match="ablates with one of .*, not 'scale'"):
        _cfg(sufficiency=True, sufficiency_search=True, sufficiency_search_ablation="scale")
    with pytest.raises(ValueError, match="sufficiency_step"):
        _cfg(sufficiency=True, sufficiency_search=True, sufficiency_step=0.0)


def test_run_with_search_writes_the_found_set_verified_beside_prefix_and_random(
    tmp_path, monkeypatch
):
    cfg = _search_cfg()
    _quiet_run(cfg, tmp_path)
    heads = tmp_path / "heads"
    sets = pd.read_csv(heads / "sufficient_sets.csv")
    assert set(sets.set) == {"found", "ranking prefix", "random"}
    assert set(sets.metric) == {"accuracy", "answer_logprob"}
    assert (sets.f_searched >= 0.5).all() and (sets.k == sets.heads.str.count("L")).all()
    assert sets.one_minimal.all() and (sets.patience == 8).all() and (sets.upper == 1.1).all()
    assert set(sets.ranking) == {str(cfg.attribution)}
    for r in sets[sets.set == "found"].itertuples():  # the status is read off the held-out f
        f = sets[(sets.task == r.task) & (sets.set == "found")].set_index("metric").f
        held = 0.5 <= f["answer_logprob"] <= 1.1
        assert r.status == ("found" if held else "not verified" if f["answer_logprob"] < 0.5
                            else "over-recovers")  # fmt: skip
        sizes = [int(x) for x in str(r.sizes_resampled).split(",")]
        assert len(sizes) == 2 and all(1 <= x <= r.n_total for x in sizes)
    steps = pd.read_csv(heads / "sufficient_search_steps.csv")
    assert not steps.accepted.iloc[-1] and (steps.f[steps.accepted] >= 0.5).all()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    (note,) = manifest["sufficiency"]["search"].values()
    assert note["size"] == sets.k.iloc[0]
    assert "A small sufficient set, searched" in (tmp_path / "index.html").read_text()
    # a second call of the same config resumes: the sets are read back, not searched again
    import interp_heads.analysis.head_search as head_search

    def no_search(*args, **kwargs):
        raise AssertionError("searched again")

    before = pd.read_csv(heads / "sufficient_sets.csv")
    monkeypatch.setattr(head_search, "search_heads", no_search)
    _quiet_run(cfg, tmp_path)
    pd.testing.assert_frame_equal(pd.read_csv(heads / "sufficient_sets.csv"), before)
    again = json.loads((tmp_path / "manifest.json").read_text())["sufficiency"]["search"]
    assert all(n["resumed"] and n["size"] == note["size"] for n in again.values())


def test_counterfactual_search_is_its_own_option_and_verified_on_log_prob(tmp_path):
    base = _cfg(sufficiency=True, sufficiency_search=True)
    # the examples whose corrupted prompt lowers the random model's answer log-prob (on the
    # others patching every head raises it, and the search has nothing to search for)
    rows = [
        line
        for line in (DATA / "tiny_echo.jsonl").read_text().splitlines()
        if json.loads(line)["id"] in {"t0", "t2", "t4", "t7", "t9", "t13", "t14", "t15"}
    ]
    (tmp_path / "echo.jsonl").write_text("\n".join(rows) + "\n")
    cfg = _cfg(sufficiency=True, sufficiency_search=True, sufficiency_target=0.5,
               sufficiency_search_ablation="counterfactual", n_eval=4,
               tasks=[str(tmp_path / "echo.jsonl")])  # fmt: skip
    assert cfg.search_ablation == "counterfactual" and str(cfg.ablation) == "mean"
    assert base.search_ablation == "mean"
    assert _cfg(sufficiency=True, sufficiency_search=True,
                sufficiency_search_ablation=None).digest() == base.digest()  # fmt: skip
    _quiet_run(cfg, tmp_path / "run")
    sets = pd.read_csv(tmp_path / "run" / "heads" / "sufficient_sets.csv")
    assert set(sets.set) == {"found", "ranking prefix", "random"}
    assert set(sets.metric) == {"answer_logprob"} and set(sets.ablation) == {"counterfactual"}
    assert (sets.f_searched >= 0.5).all() and sets.one_minimal.all()


def test_the_ks_grid_sweeps_only_the_runs_ks_and_keeps_their_verdicts(tmp_path):
    assert (
        _cfg(sufficiency=True, sufficiency_grid="mib").digest() == _cfg(sufficiency=True).digest()
    )
    cfg = _cfg(sufficiency=True, sufficiency_grid="ks", sufficiency_seeds=1)
    _quiet_run(cfg, tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["sufficiency"]["ks"] == [0, 2, 12]
    heads = tmp_path / "heads"
    records = pd.read_parquet(heads / "sufficiency.parquet")
    assert set(records.k) == {0, 2, 12}
    text = (heads / "sufficiency.csv").read_text()
    assert "cpr" not in text and "necessity_area" not in text  # areas need the MIB grid
    assert list(pd.read_csv(heads / "sufficiency_verdicts.csv").k) == [2]


def test_run_with_sufficiency_writes_tables_and_the_page_section(tmp_path):
    metrics = ["accuracy", "answer_logprob", "logit_diff", "kl_unmasked"]
    cfg = _cfg(sufficiency=True, sufficiency_seeds=2, sufficiency_metrics=metrics)
    _quiet_run(cfg, tmp_path)  # the random model answers nothing: low baselines
    heads = tmp_path / "heads"
    curves = pd.read_csv(heads / "sufficiency_curves.csv")
    assert set(curves.metric) == set(metrics)
    assert set(curves.k[curves.curve == "ranking"]) == {0, 1, 2, 6, 7, 9, 11, 12}
    for metric in ("answer_logprob", "logit_diff", "kl_unmasked"):
        c = curves[(curves.metric == metric) & (curves.curve == "ranking")].set_index("k").f
        assert c[12] == 1.0 and c[0] == 0.0
    summary = pd.read_csv(heads / "sufficiency.csv")
    assert {"cpr", "cmd", "necessity_area"} <= set(summary.measure)
    assert (heads / "sufficiency.parquet").exists() and (heads / "sufficiency").is_dir()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["sufficiency"]["ks"] == [0, 1, 2, 6, 7, 9, 11, 12]
    assert manifest["status"] == "complete"
    page = (tmp_path / "index.html").read_text()
    assert "How many heads does each task need?" in page and "fig-sufficiency" in page
    assert "CPR (higher is better)" in page and "CMD (lower is better)" in page
    assert (tmp_path / "figures" / "sufficiency.html").exists()
    run = load_run(tmp_path)
    assert run["sufficiency_curves"] is not None and len(run["sufficiency"])
    _results_section(tmp_path, curves)


def _results_section(run, curves):
    """``studies.sufficiency`` writes docs/results.md's section from the run folder alone,
    beside the section of make heads, and a second write replaces it."""
    import pytest

    from interp_heads.studies import seed_figure, sufficiency

    page = run / "results.md"
    heads = "\n".join(seed_figure.SECTIONS["heads"])
    page.write_text(f"# Results\n\n## Reading the results\n\n{heads}\n")
    sufficiency.write_section(run, page, run / "docs_figures")
    sufficiency.write_section(run, page, run / "docs_figures")
    text = page.read_text()
    block = seed_figure.section(text, "sufficiency")
    assert block and text.count(seed_figure.SECTIONS["sufficiency"][0]) == 1
    assert seed_figure.section(text, "heads") == heads
    assert text.index("## Reading the results") < text.index(heads) < text.index(block)
    full = curves[(curves.metric == "accuracy") & (curves.curve == "ranking")].full.iloc[0]
    # the ranking whose prefixes were kept is named on each row, before the unmasked accuracy
    assert f"| {curves.task.iloc[0]} | `atp` | {full:.2f} |" in block
    assert "CPR ranking" in block and "f, top 2 kept" in block
    assert "- CPR (higher is better)" in block
    with pytest.raises(SystemExit, match="no heads/sufficiency.csv"):
        sufficiency.write_section(run / "nowhere", page, run / "docs_figures")


def test_a_run_stopped_after_its_searches_resumes_from_each_kept_search(tmp_path, monkeypatch):
    """Each search (the task's, each resample's) is kept as it ends: a run stopped before its
    tables were written searches again only what was not kept."""
    import interp_heads.analysis.head_search as head_search

    cfg = _search_cfg()
    _quiet_run(cfg, tmp_path)
    heads = tmp_path / "heads"
    before = pd.read_csv(heads / "sufficient_sets.csv")
    kept = sorted(p.name for p in (heads / "sufficient_search").iterdir())
    assert kept == [f"tiny_echo__{w}.json" for w in ("main", "r0", "r1")]
    # stopped during the second resample's search: no tables, no entry for it
    for p in (heads / "sufficient_sets.csv", heads / "sufficient_search_steps.csv",
              heads / "sufficient_search" / "tiny_echo__r1.json"):  # fmt: skip
        p.unlink()
    searched, real = [], head_search.search_heads

    def counted(*args, **kwargs):
        searched.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(head_search, "search_heads", counted)
    _quiet_run(cfg, tmp_path)
    assert len(searched) == 1  # resample 1 only: the task's search and resample 0 were kept
    pd.testing.assert_frame_equal(pd.read_csv(heads / "sufficient_sets.csv"), before)
    # the folder reused (--force) with another target: its kept searches are not taken
    other = RunConfig.from_dict({**cfg.to_dict(), "sufficiency_target": 0.6})
    searched.clear()
    _quiet_run(other, tmp_path, force=True)
    assert len(searched) == 3
