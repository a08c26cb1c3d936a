"""The probe step with the study's options: importance read on the rows the sweep masks, the
training settings from the config, every skill of a CogQA file as a label, chance on the page."""

from __future__ import annotations

import json
import warnings

import pytest

from interp_heads.models.tl_compat import HAS_HOOKED
from interp_heads.pipeline.probe_step import probe_settings, unswept_skills
from interp_heads.tasks.cogqa import read_cogqa
from interp_heads.testing.planted import label_planted_tasks

COGQA = "tests/data/cogqa_small.json"


def test_unswept_skills_are_the_files_other_skills_in_its_format():
    tasks = {t.name: t for t in read_cogqa(COGQA)}
    swept = ["cogqa/Retrieval", "cogqa/Math Calculation"]
    splits = {n: tasks[n].split(1) if len(tasks[n]) > 1 else (tasks[n], tasks[n]) for n in swept}
    fmts = dict.fromkeys(swept, "cognitive_mirrors")
    others = unswept_skills(splits, fmts, 1)
    assert [o.name for o in others] == [n for n in tasks if n not in swept]  # 7 skills
    assert all(len(o) == 1 and fmts[o.name] == "cognitive_mirrors" for o in others)


def test_the_study_settings_reach_the_probe():
    from interp_heads.config.run_config import RunConfig

    cfg = RunConfig.from_toml("configs/cognitive_mirrors.toml")
    s = probe_settings(cfg)
    assert (s.epochs, s.batch_size, s.lr, s.labels, s.importance) == (
        100, 1, 1e-4, "skills", "abs_mean",
    )  # fmt: skip
    assert (cfg.probe_position, cfg.probe_rows) == ("generated", "evaluated")


@pytest.mark.skipif(not HAS_HOOKED, reason="a planted HookedTransformer (no TL 4 twin)")
def test_evaluated_rows_go_to_the_manifest_and_the_page(tmp_path):
    from interp_heads.pipeline.experiment import RunConfig, run_pipeline
    from interp_heads.tasks.io import save_task

    paths = [str(save_task(t, tmp_path / f"{t.name}.jsonl")) for t in label_planted_tasks(12)]
    cfg = RunConfig.from_dict(
        {
            "model": "tiny", "tasks": paths, "attribution": "probe", "probe_position": "last",
            "probe_rows": "evaluated", "probe_importance": "abs_mean", "probe_batch": 4,
            "probe_epochs": 5, "n_rank": 8, "n_eval": 4, "ks": [2], "seeds": 1,
            "selections": ["topk", "randomk"], "metrics": ["accuracy"], "max_new_tokens": 2,
            "filter_correct": False, "verify": 0, "known_heads": False,
        }
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        index = run_pipeline(cfg, tmp_path / "run", quiet=True)
    p = json.loads((tmp_path / "run" / "manifest.json").read_text())["probe"]
    assert (p["rows"], p["n_train"], p["n_heldout"], p["chance"]) == ("evaluated", 16, 8, 0.5)
    assert p["settings"]["batch_size"] == 4 and p["importance"] == "abs_mean"
    page = index.read_text()
    assert "chance (1 / labels)" in page and "accuracy (rows masked)" in page


@pytest.mark.skipif(not HAS_HOOKED, reason="a planted HookedTransformer (no TL 4 twin)")
def test_an_attribute_only_run_reads_the_evaluated_rows_a_sweep_of_its_config_would_mask(tmp_path):
    """A ranking made apart (``attribute``, a study's ranking run) with probe_rows = "evaluated"
    reads the rows its config's sweep evaluates: the rank rows' successors, as a run would."""
    from interp_heads.pipeline.experiment import (
        RunConfig,
        attribute_steps,
        run_experiment,
        run_pipeline,
    )
    from interp_heads.tasks.io import save_task

    paths = [str(save_task(t, tmp_path / f"{t.name}.jsonl")) for t in label_planted_tasks(12)]
    d = {"model": "tiny", "tasks": paths, "attribution": "probe", "probe_position": "last",
         "probe_rows": "evaluated", "probe_epochs": 5, "probe_batch": 4, "n_rank": 8,
         "n_eval": 4, "ks": [2], "seeds": 1, "selections": ["topk", "randomk"],
         "metrics": ["accuracy"], "max_new_tokens": 2, "filter_correct": False, "verify": 0,
         "known_heads": False}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_experiment(
            RunConfig.from_dict(d), tmp_path / "attr", quiet=True, steps=attribute_steps()
        )
        run_pipeline(RunConfig.from_dict(d), tmp_path / "run", quiet=True)
    alone = json.loads((tmp_path / "attr" / "manifest.json").read_text())
    whole = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert alone["splits"] == whole["splits"] and alone["splits"]["task_a"]["eval"]
    for key in ("rows", "n_heldout", "heldout_accuracy"):
        assert alone["probe"][key] == whole["probe"][key]
    ranks = [(tmp_path / f / "ranking.csv").read_text() for f in ("attr", "run")]
    assert ranks[0] == ranks[1]  # the ranking made apart is the one a whole run makes
