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
    raw = json.loads((DATA / "cogqa_small.json").read_text())
    for eid in study:  # each prompt as the study builds it, and as a plain completion prompt
        i, j = (int(x) for x in eid.split("-"))
        subs = raw[i]["generated"]
        cot = cm.prior_knowledge([(s["subquestion"], str(s["answer"]), s["cognitive_skill"])
                                  for s in subs[:j]], first=j == 0)  # fmt: skip
        question, sub = raw[i]["question"], subs[j]["subquestion"]
        assert study[eid] == cm.study_prompt(question, cot, sub)
        assert plain[eid] == plain_prompt(question, cot, sub)
