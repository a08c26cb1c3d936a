"""A run's whole plan is checked before its folder is touched (``pipeline.plan_check``).

A copy of one finished tiny run, then a bad command with ``--force``: every refusal must leave the
folder byte-identical (no earlier result retired, no lock, no manifest rewritten). The cases are
the metric needs (the logit metrics and ``positions``, ``logit_diff`` and distractors) through
``run`` and ``ablate``, and a fuzz of every config key with bad values.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tests.helpers import DATA, TINY_CONFIG, cli, finished_run, snapshot

TASK = DATA / "tiny_echo.jsonl"
CONFIG = TINY_CONFIG


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """One finished tiny run (``tests/data/tiny.toml``), copied by each case."""
    return finished_run(tmp_path_factory.mktemp("finished"))


@pytest.fixture(scope="module")
def plain_task(tmp_path_factory) -> Path:
    """tiny_echo without corrupted answers or distractors (named as tiny_echo)."""
    path = tmp_path_factory.mktemp("task") / "tiny_echo.jsonl"
    rows = [json.loads(line) for line in TASK.read_text().splitlines() if line.strip()]
    for row in rows:
        for key in ("corrupted_prompt", "corrupted_answer", "distractors"):
            row.pop(key, None)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def refused(finished: Path, tmp_path: Path, *argv, capsys=None) -> str:
    """Run ``argv`` with ``--force`` on a copy of the finished run (``{out}``, ``{config}`` and
    ``{ranking}`` substituted); assert exit 2 and the copy byte-identical; the error line."""
    out, ranking = tmp_path / "run", tmp_path / "ranking"
    shutil.copytree(finished, out)
    shutil.copytree(finished, ranking)
    before = snapshot(out)
    names = {"{out}": out, "{ranking}": ranking, "{config}": tmp_path / "c.toml"}
    args = [names.get(str(a), a) for a in argv]
    if capsys is not None:
        capsys.readouterr()
    assert cli(*args, "--force", "--quiet") == 2
    assert snapshot(out) == before, "a refused --force rerun changed the earlier run"
    return capsys.readouterr().err if capsys is not None else ""


def _run(tmp_path: Path, extra: str, config: str = CONFIG) -> tuple:
    (tmp_path / "c.toml").write_text(config + "\n" + extra + "\n")
    return ("run", "--config", "{config}", "--out", "{out}")


def _ablate(task: Path, *flags) -> tuple:
    return (
        "ablate", "--model", "tiny", "--task", task, "--ranking", "{ranking}", "--k", "2",
        "--seeds", "1", "--no-filter", "--max-new-tokens", "2", "--out", "{out}", *flags,
    )  # fmt: skip


# --------------------------------------------------------------------------- the metrics' needs
@pytest.mark.parametrize("metric", ["answer_logprob", "kl_unmasked"])
def test_run_with_a_logit_metric_at_the_last_position_leaves_the_earlier_run(
    finished, tmp_path, capsys, metric
):
    cfg = CONFIG.replace('metrics = ["accuracy", "chrf"]', f'metrics = ["{metric}"]')
    argv = _run(tmp_path, 'positions = "last"', cfg)
    assert "positions = 'all'" in refused(finished, tmp_path, *argv, capsys=capsys)


def test_run_with_logit_diff_on_a_task_without_distractors_leaves_the_earlier_run(
    finished, tmp_path, capsys, plain_task
):
    cfg = CONFIG.replace('metrics = ["accuracy", "chrf"]', 'metrics = ["logit_diff"]')
    cfg = cfg.replace(str(TASK), str(plain_task)).replace('"atp"', '"auto"')
    argv = _run(tmp_path, "", cfg)
    assert "distractor" in refused(finished, tmp_path, *argv, capsys=capsys)


def test_the_study_accuracy_alone_on_plain_answers_is_refused_in_one_line(
    finished, tmp_path, capsys
):
    # tiny_echo's answers are plain: no JSON block, so the study's rule extracts the template's
    # placeholder for every answer (metrics.scorable)
    cfg = CONFIG.replace(
        'metrics = ["accuracy", "chrf"]', 'metrics = ["cognitive_mirrors_accuracy"]'
    )
    err = refused(finished, tmp_path, *_run(tmp_path, "", cfg), capsys=capsys)
    assert "cannot score plain answers" in err and len(err.strip().splitlines()) == 1


def test_the_study_accuracy_beside_one_that_scores_plain_answers_is_marked(tmp_path):
    from interp_heads.metrics import resolve_metrics
    from interp_heads.pipeline.plan_check import _check_scorable

    metrics = resolve_metrics(["accuracy", "cognitive_mirrors_accuracy"])
    with pytest.warns(UserWarning, match=r"cannot score plain answers.*tasks a, b: undecided"):
        _check_scorable(metrics, {"a": "plain", "b": "plain", "c": "cognitive_mirrors"})


@pytest.mark.parametrize("metric", ["answer_logprob", "kl_unmasked"])
def test_ablate_with_a_logit_metric_at_the_last_position_leaves_the_earlier_run(
    finished, tmp_path, capsys, metric
):
    argv = _ablate(TASK, "--positions", "last", "--metrics", metric)
    assert "positions = 'all'" in refused(finished, tmp_path, *argv, capsys=capsys)


def test_ablate_with_logit_diff_on_a_task_without_distractors_leaves_the_earlier_run(
    finished, tmp_path, capsys, plain_task
):
    argv = _ablate(plain_task, "--metrics", "logit_diff", "--allow-other-task")
    assert "distractor" in refused(finished, tmp_path, *argv, capsys=capsys)


def test_the_same_ablate_with_an_answer_metric_runs(finished, tmp_path, plain_task):
    """The refusals above are for their setting: the same command otherwise runs."""
    out = tmp_path / "run"
    shutil.copytree(finished, tmp_path / "ranking")
    args = [a if a != "{ranking}" else tmp_path / "ranking" for a in _ablate(TASK)]
    args = [a if a != "{out}" else out for a in args]
    assert cli(*args, "--metrics", "chrf", "--quiet") == 0


# --------------------------------------------------------------------------- every config key
T = str(TASK)
# Bad values (TOML) of every config key, each refused on the tiny model and tiny_echo; a value
# may add lines (the settings it is bad together with).
BAD = {
    "model": ['""', '"no-such-model"', '"/dev/zero"', "3"],
    "device": ['"tpu"', '"cuda:99"', '""'],
    "threads": ["0", "-1", '"two"'],
    "backend": ['"nope"', "1"],
    "tasks": ["[]", '["no_such_task"]', '["/dev/zero"]', f'["{T}", "{T}"]'],
    "max_examples": ["0", "-3", '"all"'],
    "skip": ["-1", "1000", '"x"'],
    "n_rank": ["0", "1.5"],
    "n_eval": ["0", "-1"],
    "filter_correct": ['"yes"', "2"],
    "baseline": ['"some"', "1"],
    "fmt": ['"html"', '"chat"'],
    "ranking": ['"/nonexistent/ranking.csv"', '"/dev/zero"', "1"],
    "ranking_task": ['"tiny_echo"', "1"],
    "heads": ['["L99H0"]', "[]", '["L0H0", "L0H0"]', '["bogus"]'],
    "allow_overlap": ['"x"'],
    "allow_other_model": ['"x"'],
    "allow_other_task": ["3"],
    "attribution": ['"nope"', '"probe"', "1"],
    "refine": ["0", "13", "-1"],
    "exact_layers": ["-1", '99\nattribution = "ablation_atp"'],
    "rivals": ["-1", '259\nattribution = "ablation_atp"'],
    "lookahead": ["-1", '99\nattribution = "ablation_atp"'],
    "shared_store": ["5", '"{plain}"'],
    "steps": ["0", '"x"', "4"],  # 4: an option of ablation_ig, not of tiny.toml's method
    "verify": ["-1", '"x"'],
    "known_heads": ['"no"'],
    "probe_position": ['"first"'],
    "probe_kind": ['"cnn"'],
    "probe_epochs": ["0"],
    "probe_labels": ['"colors"', '"skills"'],
    "probe_importance": ['"max"', '"abs_mean"'],
    "probe_rows": ['"all"', '"evaluated"'],
    "probe_batch": ["0", '"x"'],
    "probe_lr": ["0", "-1e-4", "nan"],
    "ablation": ['"nope"', "3"],
    "positions": ['"first"', "[1]", '"last"\nmetrics = ["answer_logprob"]'],
    "scale_factor": ["nan", "inf", '"x"'],
    "ks": ["[]", "[0]", "[13]", "[-1]"],
    "scaled_ks": ["[0]", "[1.5]", "[-0.1]"],
    "selections": ["[]", '["nope"]'],
    "seeds": ["0", "1001"],
    "exclude_top": ['"x"'],
    "elbow": ['"x"', 'true\nheads = ["L0H0"]'],
    "damage_matched": ['"x"', "2"],
    "analyses": ['["nope"]', '"stability"', '["stability"]\nheads = ["L0H0"]'],
    "stability_ks": ["[0]", '[99]\nanalyses = ["stability"]'],
    "sufficiency": ['"x"'],
    "sufficiency_seeds": ["0", "1001"],
    "sufficiency_search": ['"x"', 'true\npositions = "last"'],
    "sufficiency_grid": ['"x"', "3"],
    "sufficiency_search_ablation": [
        '"counterfactual"',
        "3",
        '"zero"\nsufficiency = true\nsufficiency_search = true',
    ],
    "sufficiency_target": ["0", "1.5", "nan", '"x"'],
    "sufficiency_step": ["0", "1.5", "-0.1", '"x"'],
    "sufficiency_patience": ["-1", "1.5", '"x"', "2"],  # 2: without sufficiency_search
    "sufficiency_upper": [
        "0",
        '"x"',
        "1.2",  # 1.2: without sufficiency_search
        "0.95\nsufficiency = true\nsufficiency_search = true",  # below 1: not every head kept
    ],
    "sufficiency_resamples": ["-1", "1.5", '"x"', "2"],  # 2: without sufficiency_search
    "sufficiency_metrics": [
        '["nope"]',
        '["answer_logprob"]\nsufficiency = true\npositions = "last"',
        '["logit_diff"]\nsufficiency = true\ntasks = ["{plain}"]\nattribution = "auto"',
    ],
    "max_new_tokens": ["0", "100000"],
    "batch_size": ["0", "-1"],
    "batch_padding": ["-1", "1.5", '"x"'],
    "seed": ['"x"', "1.5"],
    "free_form": ['"x"'],
    "metrics": ["[]", '["nope"]', '["logit_diff"]\ntasks = ["{plain}"]\nattribution = "auto"'],
    "comet_model": ['"/nonexistent/comet"\nmetrics = ["comet"]', "1"],
    "reference": ['"silver"'],
    "executor": ['"nope"'],
    "ray_address": ["1"],
    "n_workers": ["0"],
    "n_devices": ["0", "99"],
}
CASES = [(key, value) for key, values in BAD.items() for value in values]


def test_the_fuzz_covers_every_config_key():
    from interp_heads.config.run_config import RunConfig

    assert set(BAD) == set(RunConfig.keys())


def _with(key: str, value: str, plain: Path) -> str:
    """tiny.toml with ``key = value`` (and the lines the value adds) in place of its own."""
    value = value.replace("{plain}", str(plain))
    keys = {ln.split("=")[0].strip() for ln in f"{key} = {value}".splitlines() if "=" in ln}
    kept = [ln for ln in CONFIG.splitlines() if ln.split("=")[0].strip() not in keys]
    return "\n".join([*kept, f"{key} = {value}"]) + "\n"


@pytest.mark.parametrize(("key", "value"), CASES, ids=[f"{k}={v}" for k, v in CASES])
def test_a_bad_config_value_under_force_leaves_the_finished_run(
    finished, tmp_path, plain_task, key, value
):
    (tmp_path / "c.toml").write_text(_with(key, value, plain_task))
    t0 = time.perf_counter()
    refused(finished, tmp_path, "run", "--config", "{config}", "--out", "{out}")
    assert time.perf_counter() - t0 < 60


# --------------------------------------------------------------------------- score and report
@pytest.mark.parametrize(
    "metrics", ["accuracy", "answer_logprob", "nope", "chrf,logit_diff", ",", "comet"]
)
def test_score_refuses_before_it_locks_or_writes(finished, tmp_path, monkeypatch, metrics):
    from interp_heads.store.folder import RunFolder

    def no_lock(self):
        raise AssertionError("locked before the checks")

    monkeypatch.setattr(RunFolder, "lock", no_lock)
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    before = snapshot(out)
    extra = ["--comet-model", tmp_path / "absent"] if metrics == "comet" else []
    assert cli("score", out, "--metrics", metrics, *extra) == 2
    assert snapshot(out) == before and not (out / "scores").exists()


def test_a_run_with_only_the_stability_analysis_writes_its_table(tmp_path):
    """``analyses = ["stability"]`` alone: its table makes the ``heads/`` folder it lives in."""
    (tmp_path / "c.toml").write_text(CONFIG + 'analyses = ["stability"]\nstability_ks = [2]\n')
    out = tmp_path / "run"
    assert cli("run", "--config", tmp_path / "c.toml", "--out", out, "--quiet") == 0
    assert (out / "heads" / "stability.csv").is_file()


# --------------------------------------------------------------------------- the ranking's inputs
@pytest.mark.parametrize("edit", ["same_first_token", "other_length"])
def test_run_with_corrupted_prompts_the_method_cannot_use_leaves_the_earlier_run(
    finished, tmp_path, capsys, edit
):
    rows = [json.loads(line) for line in TASK.read_text().splitlines() if line.strip()]
    if edit == "same_first_token":
        rows[1]["corrupted_answer"] = rows[1]["answer"]
    else:
        rows[1]["corrupted_prompt"] = "A much longer corrupted prompt than the clean one: x y z\n"
    path = tmp_path / "task" / "tiny_echo.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = _run(tmp_path, "", CONFIG.replace(str(TASK), str(path)))
    assert "corrupted" in refused(finished, tmp_path, *argv, capsys=capsys)
