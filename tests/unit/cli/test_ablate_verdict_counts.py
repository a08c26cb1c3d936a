"""``ablate`` and ``run_sweep`` say at the start when no verdict can come from the run (too few
random draws or examples), and the printed table shows how many of each each row has."""

from __future__ import annotations

import pytest

from tests.helpers import DATA, cli

TASK = str(DATA / "tiny_echo.jsonl")
ARGS = ["--model", "tiny", "--task", TASK, "--heads", "L0H1,L2H3", "--metrics", "accuracy",
        "--no-filter", "--max-new-tokens", 2, "--quiet"]  # fmt: skip


def test_ablate_warns_before_loading_the_model(monkeypatch, tmp_path, recwarn):
    import interp_heads.pipeline.experiment as experiment
    from interp_heads.sweep.checks import VerdictWarning

    said_before = []

    def model_load_and_run(*_, **__):  # what comes after the start: record what was said
        said_before.extend(str(w.message) for w in recwarn if w.category is VerdictWarning)
        raise RuntimeError("stopped here")

    monkeypatch.setattr(experiment, "run_experiment", model_load_and_run)
    cli("ablate", *ARGS, "--seeds", 3, "--n-eval", 6, "--out", tmp_path / "a",
        ignore_warnings=False)  # fmt: skip
    assert len(said_before) == 1
    assert "6 examples (10 needed) and 3 random draws (5 needed)" in said_before[0]
    assert "raise --seeds or --n-eval" in said_before[0]


def test_ablate_says_it_once_and_prints_n_and_draws(tmp_path, capsys, recwarn):
    from interp_heads.sweep.checks import VerdictWarning

    code = cli("ablate", *ARGS, "--seeds", 3, "--n-eval", 12, "--out", tmp_path / "b",
               ignore_warnings=False)  # fmt: skip
    assert code == 0
    said = [str(w.message) for w in recwarn if w.category is VerdictWarning]
    assert len(said) == 1 and "3 random draws (5 needed)" in said[0]
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header[-2:] == ["n_examples", "n_draws"]
    randomk = [line.split() for line in out.splitlines() if " RandomK " in line]
    assert randomk and all(row[-2:] == ["12", "3"] for row in randomk)


def test_enough_draws_and_examples_say_nothing(tmp_path, recwarn):
    from interp_heads.sweep.checks import VerdictWarning

    assert cli("ablate", *ARGS, "--seeds", 5, "--n-eval", 10, "--out", tmp_path / "c",
               ignore_warnings=False) == 0  # fmt: skip
    assert not [w for w in recwarn if w.category is VerdictWarning]


def test_run_sweep_warns_before_generating(tiny):
    from interp_heads.sweep.checks import VerdictWarning
    from interp_heads.sweep.loop import SweepConfig, run_sweep
    from interp_heads.tasks import load_task

    task = load_task(TASK).subset(n=4)
    cfg = SweepConfig(ks=[1], seeds=2, max_new_tokens=1, metrics=["accuracy"], fmt="plain")
    with pytest.warns(VerdictWarning, match="4 examples .* 2 random draws"):
        run_sweep(tiny, [task], {task.name: [(0, 0), (1, 1)]}, cfg, progress=False)


def test_a_kept_set_sweep_is_not_warned_about(recwarn):
    from interp_heads.sweep.checks import VerdictWarning, check_verdict_counts

    assert not check_verdict_counts(["topk", "all_but_topk", "all_but_randomk"], 3, {"t": 4})
    assert check_verdict_counts(["topk", "randomk"], 1, {"t": 40})
    said = [str(w.message) for w in recwarn if w.category is VerdictWarning]
    assert said == [said[0]] and "t: 1 random draw (5 needed)" in said[0]
