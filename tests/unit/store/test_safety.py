"""Safe to share and right on every kind of run (tiny model, tmp dirs, symlinks, non-run folders).

Security: a task name cannot inject script into the report (loaded in headless Chromium), nor
make ``report`` write outside the run folder; ``run`` into a folder that is not a run folder is
refused, deletes only the tool's own files and never follows a symlink out; the thread registry
never follows a planted symlink. Results: the report shows only what this config's finished
steps wrote; ``ablate`` refuses a ranking made on another task.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

from interp_heads import store as runfolder
from interp_heads.cli import main
from interp_heads.models import threads
from interp_heads.report import build_report
from interp_heads.store import faults
from interp_heads.store.names import safe_name
from tests.helpers import DATA, chromium, cli, headless

TASK = DATA / "tiny_echo.jsonl"
CONFIG = (DATA / "tiny.toml").read_text().replace("tests/data/", f"{DATA}/")
ROWS = [json.loads(line) for line in TASK.read_text().splitlines()]
XSS_STEM = "b\"><img src=x onerror=\"document.body.setAttribute('data-pwned','yes')\">"


def _task_file(path: Path, rows=ROWS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "task"}) + "\n" for r in rows)
    )
    return path


def _attribute(task: Path, out: Path, *extra) -> int:
    return cli(
        "attribute",
        "--model",
        "tiny",
        "--task",
        task,
        "--no-filter",
        "--n-examples",
        4,
        "--out",
        out,
        "--quiet",
        *extra,
    )


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


@pytest.fixture(scope="module")
def xss_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("xss")
    task = _task_file(root / "xss" / f"{XSS_STEM}.jsonl")
    assert _attribute(task, root / "R") == 0
    return root / "R"


# --------------------------------------------------------------------------- 1, 2: names
def test_safe_name_keeps_plain_names_and_hashes_others():
    assert safe_name("knowledge_recall") == "knowledge_recall"
    for bad in ("/../../../x", XSS_STEM, "..", "", "a" * 300, "x-h0123abcd"):
        out = safe_name(bad)
        assert out != bad and len(out) <= 64 and out.rsplit("-h", 1)[1].isalnum()
        assert all(c.isalnum() or c in "_.-" for c in out) and not out.startswith(".")
    assert len({safe_name(n) for n in ("a/b", "a_b", "a?b", "a b")}) == 4


def test_task_name_is_not_raw_in_ids_or_script(xss_run):
    page = (xss_run / "index.html").read_text()
    assert "<img" not in page and XSS_STEM not in page
    assert f'id="fig-heatmap_{safe_name(XSS_STEM)}"' in page or "fig-heatmap_" in page


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed")
def test_task_name_injects_nothing_in_headless_chromium(xss_run, tmp_path):

    # also a name that tries to end the script tag, planted in the saved table
    attr = pd.read_parquet(xss_run / "attribution.parquet")
    other = tmp_path / "R2"
    other.mkdir()
    evil = "</script><img src=x onerror=\"document.body.setAttribute('data-pwned','yes')\">"
    pd.concat([attr, attr.assign(task=evil)]).to_parquet(other / "attribution.parquet")
    build_report(other)
    for run in (xss_run, other):
        url = (run / "index.html").resolve().as_uri()
        dom = headless(chromium(), "--virtual-time-budget=10000", "--dump-dom", url).stdout
        assert "<body" in dom and 'class="plot-container plotly"' in dom, dom[:300]
        assert 'data-pwned="yes"' not in dom and "<img" not in dom


def test_report_writes_only_inside_the_run_folder(xss_run, tmp_path):
    run = tmp_path / "a" / "b" / "c" / "run"
    run.mkdir(parents=True)
    attr = pd.read_parquet(xss_run / "attribution.parquet")
    attr.assign(task="/../../../x").to_parquet(run / "attribution.parquet")
    before = _files(tmp_path)
    build_report(run)
    new = _files(tmp_path) - before
    assert new and all(run in p.parents for p in new), sorted(map(str, new))
    assert not list(tmp_path.rglob("x.html"))


# --------------------------------------------------------------------------- 3: run folders
def _config(tmp: Path, text: str = CONFIG) -> Path:
    (tmp / "c.toml").write_text(text)
    return tmp / "c.toml"


def test_run_refuses_a_folder_that_is_not_a_run_folder(tmp_path, capfd):
    out = tmp_path / "work"
    (out / "conditions").mkdir(parents=True)
    mine = out / "conditions" / "experiment1.json"
    mine.write_text('{"my": "data"}')
    (out / "notes.txt").write_text("mine")
    assert cli("run", "--config", _config(tmp_path), "--out", out, "--quiet") == 2
    assert "not an interp-heads run folder" in capfd.readouterr().err
    assert {p.name for p in _files(out)} == {"experiment1.json", "notes.txt"}
    # with --force the tool writes its files but deletes none of the user's
    assert cli("run", "--config", _config(tmp_path), "--out", out, "--quiet", "--force") == 0
    assert mine.read_text() == '{"my": "data"}' and (out / "notes.txt").read_text() == "mine"
    # a rerun with another grid prunes the tool's stale entries only
    other = CONFIG.replace("ks = [2, 4, 8]", "ks = [2]")
    assert cli("run", "--config", _config(tmp_path, other), "--out", out, "--quiet", "--force") == 0
    names = {p.stem for p in (out / "conditions").glob("*.json")}
    assert "experiment1" in names and not any("__k8__" in n for n in names)
    listed = json.loads((out / "manifest.json").read_text())["files"]["conditions"]
    assert set(listed) == names - {"experiment1", "config"}


def test_run_never_follows_a_symlinked_subfolder(tmp_path, capfd):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "tiny_echo__TopK__k99__s0.json"
    victim.write_text("precious")
    out = tmp_path / "run"
    assert cli("run", "--config", _config(tmp_path), "--out", out, "--quiet") == 0
    shutil.rmtree(out / "conditions")
    (out / "conditions").symlink_to(outside, target_is_directory=True)
    assert cli("run", "--config", _config(tmp_path), "--out", out, "--quiet") == 2
    assert "symbolic link" in capfd.readouterr().err
    assert victim.read_text() == "precious" and [p.name for p in outside.iterdir()] == [victim.name]


def test_delete_leaves_links_and_outside_files_alone(tmp_path):
    from interp_heads.store.folder import RunFolder

    folder = RunFolder(tmp_path / "run")
    (folder.conditions).mkdir(parents=True)
    target = tmp_path / "target.json"
    target.write_text("x")
    link = folder.conditions / "link.json"
    link.symlink_to(target)
    assert not folder.delete(link) and not folder.delete(target) and target.exists()
    own = folder.conditions / "own.json"
    own.write_text("{}")
    assert folder.delete(own) and not own.exists()


def test_out_must_be_named(tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _attribute(TASK, "") == 2
    assert "error:" in capfd.readouterr().err and list(tmp_path.iterdir()) == []


def test_refused_inputs_leave_no_folder(tmp_path):
    out = tmp_path / "new"
    bad = CONFIG.replace('"chrf"', '"bleu"')
    assert cli("run", "--config", _config(tmp_path, bad), "--out", out, "--quiet") == 2
    assert not out.exists()
    empty = _task_file(tmp_path / "never.jsonl", [{**ROWS[0], "answer": "zz"}])
    assert (
        cli(
            "attribute",
            "--model",
            "tiny",
            "--task",
            empty,
            "--n-examples",
            1,
            "--out",
            out,
            "--quiet",
        )
        == 2
    )
    assert not out.exists()


# --------------------------------------------------------------------------- 4: registry
def test_thread_registry_ignores_a_planted_symlink(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path))
    target = tmp_path / "victim"
    target.mkdir()
    (target / "999999999").write_text("precious")
    threads._registry().symlink_to(target, target_is_directory=True)
    (tmp_path / "interp_heads-procs").symlink_to(target, target_is_directory=True)  # old name
    assert threads.live_processes() == 1
    assert (target / "999999999").read_text() == "precious"
    monkeypatch.setitem(threads._state, "registered", None)
    threads._register()
    assert threads._state["registered"] is None and sorted(os.listdir(target)) == ["999999999"]
    threads._registry().unlink()
    threads._registry().mkdir(mode=0o777)
    os.chmod(threads._registry(), 0o777)  # open to other users: not used either
    assert threads._safe_registry() is None


# --------------------------------------------------------------------------- 6: stale results
def test_report_after_a_killed_force_rerun_shows_no_old_results(tmp_path, monkeypatch):
    out = tmp_path / "run"
    assert cli("run", "--config", _config(tmp_path), "--out", out, "--quiet") == 0
    assert "Cognitive Mirrors figure" in (out / "index.html").read_text()

    class Killed(BaseException):  # like SIGKILL: no handler of the CLI catches it
        pass

    def point(name):
        if name == "step:sweep":
            raise Killed

    monkeypatch.setattr(faults, "point", point)
    other = CONFIG.replace("seeds = 2", "seeds = 3")
    with pytest.raises(Killed), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main(
            [
                "run",
                "--config",
                str(_config(tmp_path, other)),
                "--out",
                str(out),
                "--quiet",
                "--force",
            ]
        )
    monkeypatch.setattr(faults, "point", lambda name: None)
    assert not (out / "summary.parquet").exists()  # the earlier config's table is retired
    assert not (out / "index.html").exists()  # and so is its page
    assert cli("report", out) == 0
    page = (out / "index.html").read_text()
    assert "Cognitive Mirrors figure" not in page and "TopK vs RandomK" not in page
    assert "incomplete" in page and "sweep" in page.split("not run:")[1][:40]


def test_ablate_refuses_a_ranking_of_another_task(tmp_path, capfd):
    other = _task_file(tmp_path / "other_task.jsonl")
    assert _attribute(other, tmp_path / "R") == 0
    argv = ["ablate", "--model", "tiny", "--task", TASK, "--ranking", tmp_path / "R", "--k", 1, "--seeds", 1, "--no-filter", "--metrics", "accuracy", "--out", tmp_path / "A", "--quiet"]  # fmt: skip
    assert cli(*argv) == 2
    assert "was made on task(s) 'other_task', not 'tiny_echo'" in capfd.readouterr().err
    assert cli(*argv, "--ranking-task", "other_task") == 0


# --------------------------------------------------------------------------- 11, 12: files, locks
def test_damaged_plotlyjs_and_stale_temp_files_are_repaired(xss_run, tmp_path):
    run = tmp_path / "R"
    shutil.copytree(xss_run, run)
    js = run / "figures" / "plotly.min.js"
    full = js.read_bytes()
    for damaged in (full[:1000], b"x" * len(full)):  # a disk that filled mid-write; same size
        js.write_bytes(damaged)
        assert cli("report", run) == 0
        assert js.read_bytes() == full
    stale = run / "conditions"
    stale.mkdir(exist_ok=True)
    tool = [stale / ".x.json.interp-heads-tmp999999999", run / ".summary.parquet.interp-heads-tmp999999999"]  # fmt: skip
    users = [run / ".mynotes.tmp4194303", stale / ".x.json.tmp999999999", run / ".a.interp-heads-tmp"]  # fmt: skip
    for p in tool + users:
        p.write_text("half")
    from interp_heads.store.folder import RunFolder

    RunFolder(run).clean_temps()
    assert not any(p.exists() for p in tool)
    assert all(p.read_text() == "half" for p in users)  # not names the tool makes


def test_force_into_a_user_folder_keeps_files_that_look_like_temporaries(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / ".mine.tmp77777").write_text("mine")
    assert cli("run", "--config", _config(tmp_path), "--out", out, "--quiet", "--force") == 0
    assert (out / ".mine.tmp77777").read_text() == "mine"


def test_a_full_disk_names_the_file(tmp_path, monkeypatch):
    import errno

    def full(_fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="writing .*manifest.json"):
        runfolder.write_atomic(tmp_path / "manifest.json", "{}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_sigterm_releases_the_lock(name, tmp_path, monkeypatch, capfd):
    import signal

    out = tmp_path / "run"
    sig = getattr(signal, name)

    def stop(args):
        from interp_heads.store.folder import RunFolder

        RunFolder(out).claim("digest")
        (out / "baseline.csv").write_text("kept")  # a stored result: the folder stays
        os.kill(os.getpid(), sig)
        raise AssertionError("not reached")

    monkeypatch.setattr("interp_heads.cli.cmd_run", stop)
    from interp_heads import cli as cli_module

    parser = cli_module.build_parser
    monkeypatch.setattr(cli_module, "build_parser", lambda: _with_func(parser(), stop))
    assert cli("run", "--config", _config(tmp_path), "--out", out) == 128 + sig
    assert "interrupted" in capfd.readouterr().err
    assert not (out / runfolder.LOCK_NAME).exists() and (out / "baseline.csv").exists()


def _with_func(parser, func):
    for action in parser._subparsers._group_actions:
        action.choices["run"].set_defaults(func=func)
    return parser


def test_a_lock_whose_pid_was_reused_is_taken_over(tmp_path):
    (tmp_path / runfolder.LOCK_NAME).write_text(
        json.dumps(
            {"pid": os.getppid(), "host": __import__("socket").gethostname(), "started": "-1"}
        )
    )
    with pytest.warns(runfolder.StoreWarning, match="stale lock"):
        lock = runfolder.acquire(tmp_path)
    runfolder.release(lock)
    assert not lock.exists()


# --------------------------------------------------------------------------- 9, 13: messages
def test_a_bug_is_not_reported_as_bad_input(tmp_path, monkeypatch, capfd):
    from interp_heads import cli as cli_module

    def bug(args):
        raise KeyError("internal")

    parser = cli_module.build_parser
    monkeypatch.setattr(cli_module, "build_parser", lambda: _with_func(parser(), bug))
    assert cli("run", "--config", _config(tmp_path), "--out", tmp_path / "r") == 1
    assert "internal error: KeyError" in capfd.readouterr().err
    monkeypatch.setenv("INTERP_HEADS_DEBUG", "1")
    with pytest.raises(KeyError):
        main(["run", "--config", str(_config(tmp_path)), "--out", str(tmp_path / "r")])


def test_interrupt_at_start_up_and_broken_pipe_are_one_line(monkeypatch, capfd, tmp_path):
    from interp_heads import cli as cli_module

    def interrupted():
        raise KeyboardInterrupt

    parser = cli_module.build_parser
    monkeypatch.setattr(cli_module, "build_parser", interrupted)
    assert main(["tasks", "list"]) == 130
    err = capfd.readouterr().err
    assert err.strip().count("\n") == 0 and "Traceback" not in err

    def reader_left(args):
        raise BrokenPipeError

    dup2 = []
    monkeypatch.setattr(os, "dup2", lambda *a: dup2.append(a))
    monkeypatch.setattr(cli_module, "build_parser", lambda: _with_func(parser(), reader_left))
    (tmp_path / "x.toml").write_text(CONFIG)  # inputs the early checks accept
    out = str(tmp_path / "o")
    assert main(["run", "--config", str(tmp_path / "x.toml"), "--out", out]) == 141
    assert capfd.readouterr().err == "" and dup2


def test_config_tasks_resolve_against_the_config_folder_and_a_bom_is_fine(tmp_path, monkeypatch):
    conf = tmp_path / "exp"
    conf.mkdir()
    shutil.copy(TASK, conf / "mine.jsonl")
    text = CONFIG.replace(str(TASK), "mine.jsonl")
    (conf / "c.toml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    monkeypatch.chdir(tmp_path)  # not the config's folder
    assert cli("run", "--config", conf / "c.toml", "--out", tmp_path / "run", "--quiet") == 0


# --------------------------------------------------------------------------- 8, 14: the pages
def test_attribute_page_has_no_sweep_sections_and_offers_ablate(xss_run, tmp_path, capfd):
    out = tmp_path / "A"
    assert cli("attribute", "--model", "tiny", "--task", TASK, "--no-filter", "--n-examples", 4, "--out", out, "--method", "ablation_atp", "--exact-layers", 1) == 0  # fmt: skip
    captured = capfd.readouterr()
    assert "Moving model to device" not in captured.out + captured.err
    page = (out / "index.html").read_text()
    for absent in ("Cognitive Mirrors figure", "TopK vs RandomK", "No sweep", "No baseline", "No attribution", "Example generations", "seeds {}", "metrics {}"):  # fmt: skip
        assert absent not in page, absent
    assert "Head attribution per task" in page and "(tiny_echo)" in page
    assert "Status: complete" in page and "interp-heads ablate --model tiny --task" in page
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["exact_layers"] == 1


def test_ablate_page_names_its_ranking(tmp_path):
    assert _attribute(TASK, tmp_path / "R") == 0
    out = tmp_path / "B"
    assert cli("ablate", "--model", "tiny", "--task", TASK, "--ranking", tmp_path / "R", "--k", "1,2", "--seeds", 1, "--no-filter", "--metrics", "accuracy", "--out", out, "--quiet") == 0  # fmt: skip
    page = (out / "index.html").read_text()
    assert "<h2>Ranking masked</h2>" in page and str(tmp_path / "R") in page
    assert 'href="../R/index.html"' in page and "file://" not in page  # relative: folders move
    assert "(tiny_echo)" in page and "no tasks" not in page and "Status: complete" in page
    assert (
        "Cognitive Mirrors figure" in page
        and "Head attribution" not in page
        and "No baseline" not in page
    )
    assert "random_draws" in page.split("<h2>Provenance</h2>")[1].split("<details>")[0]


# --------------------------------------------------------------------------- notebooks
def test_results_show_in_a_notebook_cell(xss_run, tmp_path):
    from interp_heads.attribution import HeadScores
    from interp_heads.report import load_run
    from interp_heads.sweep.loop import SweepConfig, SweepResult

    run = load_run(xss_run)
    scores = HeadScores.from_frame(run["attribution"])
    assert cli("run", "--config", _config(tmp_path), "--out", tmp_path / "S", "--quiet") == 0
    swept = load_run(tmp_path / "S")
    result = SweepResult(swept["records"], swept["generations"], SweepConfig(ks=[2, 4, 8]))
    for obj in (scores, run, result, swept):
        html = obj._repr_html_()
        assert "<table" in html and "plotly" in html.lower() and "<img" not in html
    assert "TopK" in result._repr_html_()


# --------------------------------------------------------------------------- 13, 14: names, progress
def test_a_long_task_file_name_runs_and_the_baseline_bar_counts_examples(tmp_path, capfd):
    task = _task_file(tmp_path / f"{'n' * 200}.jsonl")
    out = tmp_path / "run"
    config = CONFIG.replace(str(TASK), str(task)).replace("ks = [2, 4, 8]", "ks = [2]")
    config = config.replace("filter_correct = false", "filter_correct = true\nn_rank = 1")
    config = config.replace("n_rank = 4\n", "")
    assert cli("run", "--config", _config(tmp_path, config), "--out", out) == 2  # 0 correct
    err = capfd.readouterr().err
    assert re.search(rf"baseline examples: .*\d+/{len(ROWS)} ", err), err[-500:]  # not /1 task
    assert "left after filtering" in err and "File name too long" not in err
    assert _attribute(task, out) == 0  # a 200-character task name: its files are named safely
    assert all(len(p.name) <= 80 for p in out.rglob("*"))


# --------------------------------------------------------------------------- 5, 7: answers and task files
@pytest.mark.parametrize(
    ("generation", "answer", "correct"),
    [
        ("A", "A", True),
        ("(A)", "A", True),
        ("A) Paris", "A", True),
        ("The answer is A.", "A", True),
        ("a cat", "A", False),
        ("B", "A", False),
        ("1/2", "2", False),
        ("1/2", "1/2", True),
        ("C++", "C", False),
        ("C++", "C++", True),
        ("C# is", "C#", True),
        ("The capital of France is Paris.", "Paris", True),
        ("120", "12", False),
        ("twenty-one", "21", True),
    ],
)
def test_answer_checking(generation, answer, correct):
    from interp_heads.tasks.checking import is_correct

    assert is_correct(generation, answer) is correct


def test_task_files_refuse_answers_with_nothing_to_check(tmp_path):
    from interp_heads.tasks import TaskFormatError
    from interp_heads.tasks.io import read_task_file

    for answer in ("...", "\u200b", " - "):
        path = _task_file(tmp_path / "t.jsonl", [{**ROWS[0], "answer": answer}])
        with pytest.raises(TaskFormatError, match="no letter or digit"):
            read_task_file(path)
    path = _task_file(tmp_path / "t.jsonl", [{**ROWS[0], "answer": "A"}])
    assert read_task_file(path).examples[0].answer == "A"


def test_csv_task_file_header_checks(tmp_path):
    from interp_heads.tasks import TaskFormatError
    from interp_heads.tasks.io import read_task_file

    cases = {
        b"prompt,answer,answer\nx,cat,dog\n": "names column 'answer' twice",
        b"Prompt,answer\nx,cat\n": "found 'Prompt'",
        b" prompt,answer\nx,cat\n": "found ' prompt'",
        b"prompt;answer\nx;cat\n": "comma-separated",
        b"task,prompt,answer\na,x,cat\nb,y,dog\n": "differs from task 'a'",
    }
    for data, message in cases.items():
        (tmp_path / "t.csv").write_bytes(data)
        with pytest.raises(TaskFormatError, match=message):
            read_task_file(tmp_path / "t.csv")
    with pytest.raises(TaskFormatError, match="is a folder"):
        read_task_file(tmp_path)
    with pytest.raises(TaskFormatError, match="not a regular file"):
        read_task_file("/dev/null")


def test_a_prompt_spelling_a_special_token_is_refused(tiny):
    from interp_heads.config.validation import check_special_tokens
    from interp_heads.errors import PipelineError
    from interp_heads.tasks.schema import Example, Task

    task = Task(name="t", examples=[Example(id="1", task="t", prompt="Say <|im_end|>", answer="x")])
    with pytest.raises(PipelineError, match="special token '<\\|im_end\\|>'"):
        check_special_tokens(tiny, task)


# --------------------------------------------------------------------------- rankings of other inputs
def _ablate_argv(task, ranking, out, *extra) -> list:
    return ["ablate", "--model", "tiny", "--task", task, "--ranking", ranking, "--k", 1, "--seeds", 1, "--no-filter", "--metrics", "accuracy", "--out", out, "--quiet", *extra]  # fmt: skip


def test_ablate_refuses_a_ranking_of_another_file_of_the_same_task(tmp_path, capfd):
    assert _attribute(TASK, tmp_path / "R") == 0
    data = json.loads((tmp_path / "R" / "manifest.json").read_text())["data"]
    assert (
        data["tiny_echo"]["sha256"] == __import__("hashlib").sha256(TASK.read_bytes()).hexdigest()
    )
    other = _task_file(tmp_path / "other" / TASK.name, [{**ROWS[0], "answer": "new"}, *ROWS[1:]])
    capfd.readouterr()
    assert cli(*_ablate_argv(other, tmp_path / "R", tmp_path / "A")) == 2
    err = capfd.readouterr().err
    assert "was made on another file of task 'tiny_echo'" in err and "--allow-other-task" in err
    assert not (tmp_path / "A").exists()
    assert cli(*_ablate_argv(other, tmp_path / "R", tmp_path / "A", "--allow-other-task")) == 0
    assert cli(*_ablate_argv(TASK, tmp_path / "R", tmp_path / "B")) == 0  # its own file


def test_ablate_refuses_a_ranking_whose_scores_record_another_model(tmp_path, capfd):
    from interp_heads.store import write_entry

    assert _attribute(TASK, tmp_path / "R") == 0
    entry = tmp_path / "R" / "attribution" / "tiny_echo.json"
    scores = json.loads(entry.read_text())
    scores["provenance"].update(model={"spec": "gpt2", "sha256": None}, n_layers=12, n_heads=12)
    write_entry(entry, scores, indent=1)
    capfd.readouterr()
    for ranking in (tmp_path / "R", tmp_path / "R" / "ranking.csv"):
        assert cli(*_ablate_argv(TASK, ranking, tmp_path / "A")) == 2
        err = capfd.readouterr().err
        assert "was made on model 'gpt2' (12x12 heads), not on this 'tiny' (3x4 heads)" in err
    assert cli(*_ablate_argv(TASK, tmp_path / "R", tmp_path / "A", "--allow-other-model")) == 0


def test_ablate_refuses_heads_and_a_ranking_together(tmp_path, capfd):
    argv = _ablate_argv(TASK, tmp_path, tmp_path / "A", "--heads", "L0H0")
    assert cli(*argv) == 2
    assert "give --heads or --ranking, not both" in capfd.readouterr().err


# --------------------------------------------------------------------------- CSV cells and names
def test_a_formula_task_name_is_quoted_in_csvs_and_a_bidi_control_leaves_the_title(tmp_path):
    import csv

    name = '=HYPERLINK("x.example","click")\u202eevil'
    task = _task_file(tmp_path / f"{name}.jsonl")
    assert _attribute(task, tmp_path / "R") == 0
    rows = list(csv.reader((tmp_path / "R" / "ranking.csv").open()))
    text = [c for r in rows[1:] for c in r if c and not _number(c)]
    assert text and not [c for c in text if c[0] in "=+-@"], text[:5]
    scores = [r[rows[0].index("score")] for r in rows[1:]]
    assert all(_number(v) for v in scores) and min(map(float, scores)) < 0  # numbers stay numbers
    assert rows[1][0] == "'" + name
    page = (tmp_path / "R" / "index.html").read_text()
    title = page.split("<title>")[1].split("</title>")[0]
    assert "\u202e" not in title and "HYPERLINK" in title
    out = tmp_path / "A"  # the ranking's task name survives the quoting
    assert cli(*_ablate_argv(task, tmp_path / "R" / "ranking.csv", out)) == 0
    summary = list(csv.reader((out / "summary.csv").open()))
    assert {r[0] for r in summary[1:]} == {"'" + name}


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- score
def test_score_writes_only_plain_files_inside_the_run_and_atomically(xss_run, tmp_path, capfd):
    run = tmp_path / "run"
    assert cli("run", "--config", _config(tmp_path), "--out", run, "--quiet") == 0
    outside = tmp_path / "outside.csv"
    outside.write_text("precious")
    (run / "scores").mkdir()
    (run / "scores" / "chrf.csv").symlink_to(outside)
    assert cli("score", run, "--metrics", "chrf") == 2
    assert "symbolic link" in capfd.readouterr().err and outside.read_text() == "precious"
    (run / "scores" / "chrf.csv").unlink()
    (run / "scores" / "chrf.csv").write_text("earlier scores")

    class Killed(BaseException):
        pass

    def kill(name):
        if name == "write:scores/chrf.csv":
            raise Killed

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(faults, "point", kill)
        with pytest.raises(Killed):
            main(["score", str(run), "--metrics", "chrf"])
    assert (run / "scores" / "chrf.csv").read_text() == "earlier scores"  # never half-written
    assert cli("score", run, "--metrics", "chrf") == 0
    scores = pd.read_csv(run / "scores" / "chrf.csv")
    assert len(scores) == len(pd.read_json(run / "generations.jsonl", lines=True))
