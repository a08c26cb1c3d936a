"""The plain-control study: its run draws RandomK from every head; each draw's top heads held are
counted from the run's own files (read here with json and pandas), and the page reads them."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from interp_heads.analysis.draw_overlap import draw_overlap, overlap_correlation
from interp_heads.errors import InputError
from interp_heads.studies import STUDIES, StudyRun, run_study
from interp_heads.studies.plain_control import CHANGES, FOLDER, PlainControl, table
from tests.helpers import DATA

CHANGES_TINY = {**CHANGES, "metrics": ["accuracy", "answer_logprob"], "selections": ["topk", "randomk"],
                "ks": [2, 4, 8], "seeds": 3}  # fmt: skip


class _Tiny(PlainControl):
    name = "test_plain_control"

    def runs(self, size):
        return [StudyRun(FOLDER, str(DATA / "tiny.toml"), CHANGES_TINY)]


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    root = tmp_path_factory.mktemp("plain")
    STUDIES.register(_Tiny)
    try:
        run_study(_Tiny.name, root / "runs", size="small", docs=root / "docs", quiet=True)
    finally:
        STUDIES.unregister(_Tiny.name)
    return root / "runs" / FOLDER, root / "docs" / "plain_control.md"


def _by_hand(run) -> pd.DataFrame:
    ranking = pd.read_csv(run / "ranking.csv")
    rows = []
    for path in sorted((run / "conditions").glob("*__RandomK__*.json")):
        d = json.loads(path.read_text())
        top = ranking[ranking.task == d["task"]].sort_values("rank").label.tolist()
        lp = d["scores"]["answer_logprob"]
        rows.append({"task": d["task"], "k": d["k"], "seed": d["seed"], "answer_logprob": sum(lp) / len(lp),
                     "top8_held": len(set(d["heads"]) & set(top[:8]))})  # fmt: skip
    return pd.DataFrame(rows).sort_values(["task", "k", "seed"], ignore_index=True)


def test_each_draw_counts_the_top_heads_it_masks(done):
    run, _ = done
    got, want = draw_overlap(run, metric="answer_logprob"), _by_hand(run)
    assert len(got) == 9 and got["top8_held"].sum() > 0  # drawn from every head: some held
    pd.testing.assert_frame_equal(got[want.columns], want, check_dtype=False)
    corr = overlap_correlation(got, top=8, metric="answer_logprob")
    assert pd.notna(corr["tiny_echo"])
    assert corr["tiny_echo"] == pytest.approx(want.answer_logprob.corr(want.top8_held))
    within = overlap_correlation(got, top=8, metric="answer_logprob", within_k=True)
    by_k = want.groupby("k")  # each draw less its k's mean, by hand
    x = want.answer_logprob - by_k.answer_logprob.transform("mean")
    y = want.top8_held - by_k.top8_held.transform("mean")
    assert pd.notna(within["tiny_echo"]) and within["tiny_echo"] == pytest.approx(x.corr(y))


def test_the_page_reads_the_run_folder(done):
    run, page = done
    frame, corr = table(run)
    summary = pd.read_csv(run / "summary.csv")
    text = page.read_text()
    for r in frame.itertuples(index=False):
        topk = summary[(summary.selection == "TopK") & (summary.k == r.k)
                       & (summary.metric == "accuracy")]["mean"].iloc[0]  # fmt: skip
        assert f"| tiny_echo | {r.k} | {topk:.2f} | {r.randomk_accuracy:.2f} | 3 |" in text
    assert "tiny_echo undefined (constant)" in text  # the tiny model answers nothing right
    assert list(corr.columns) == ["all_k", "within_k"]


def test_a_run_without_draws_is_refused_in_one_line(tmp_path):
    with pytest.raises(InputError, match="no ranking.csv"):
        draw_overlap(tmp_path)
