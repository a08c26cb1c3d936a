"""The specification curve on a CogQA file, on the embedded SmolLM2: the format choice asks the
same sub-questions in the study's template and as plain completion prompts (the tiny model's
128-token context cannot hold the template)."""

from __future__ import annotations

import json
import warnings

import pytest

from interp_heads.studies import run_study
from interp_heads.studies.spec_curve import SpecCurve, cogqa_options, curve_frame
from interp_heads.tasks import cognitive_mirrors as cm
from interp_heads.tasks.cogqa import plain_prompt
from tests.helpers import DATA, ROOT

pytestmark = pytest.mark.slow
COGQA = str(DATA / "cogqa_small.json")
ONE = {  # one option per choice but the format: two cells (the two ends), two runs
    "ranking": {"ablation_atp": {"attribution": "ablation_atp", "ablation": "mean"}},
    "intervention": {"mean": {"ablation": "mean"}},
    "scope": {"all": {"positions": "all"}},
    "reference": {"gold": {"metric": "accuracy"}},
    "examples": {"all": {"correct_only": False}},
    "k": {"literal": {"k": 2}},
}


class CogQACurve(SpecCurve):
    name = "cogqa_curve_test"
    options = {  # 8 new tokens (the study's 32 cost minutes here)
        **ONE,
        "format": {
            f: {**o, "max_new_tokens": 8} for f, o in cogqa_options(COGQA)["format"].items()
        },
    }
    ends = tuple({**{c: next(iter(o)) for c, o in ONE.items()}, "format": f}
                 for f in ("study", "plain"))  # fmt: skip
    prefix = "spec_curve_cogqa"
    common = {"filter_correct": False, "verify": 0, "elbow": False, "scaled_ks": [],
              "selections": ["topk", "randomk"], "exclude_top": False, "seeds": 1,
              "metrics": ["accuracy"]}  # fmt: skip
    sizes = {
        s: {"tasks": 1, "n_eval": 4, "n_rank": 2, "max_examples": 6} for s in ("small", "full")
    }


def test_both_formats_ask_the_same_cogqa_sub_questions(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the study's base config is configs/cognitive_mirrors.toml
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a small model on 4 sub-questions: low-baseline warnings
        pages = run_study(CogQACurve(), tmp_path / "runs", docs=tmp_path / "docs", quiet=True)
    assert pages[0].name == "spec_curve_cogqa.md"
    folders = {r.folder: tmp_path / "runs" / r.folder for r in CogQACurve().runs("full")}
    frame = curve_frame(folders, CogQACurve.options, CogQACurve.ends, CogQACurve.prefix)
    assert set(frame.task) == {"cogqa/Retrieval"} and list(frame.format) == ["study", "plain"]

    def prompts(fmt: str) -> dict:
        run = folders[f"spec_curve_cogqa/ablation_atp_mean_all_{fmt}"]
        rows = [json.loads(line) for line in (run / "prompts.jsonl").read_text().splitlines()]
        return {r["example_id"]: r["prompt"] for r in rows}

    study, plain = prompts("study"), prompts("plain")
    assert study.keys() == plain.keys() and len(study) == 4
    item = json.loads((DATA / "cogqa_small.json").read_text())[0]  # ids 0-0, 0-1: its first two
    first = item["generated"][0]["subquestion"]
    assert study["0-0"] == cm.study_prompt(item["question"], cm.NO_PRIOR, first)
    assert plain["0-0"] == plain_prompt(item["question"], cm.NO_PRIOR, first)
