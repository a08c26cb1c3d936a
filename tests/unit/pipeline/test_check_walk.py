"""Every check a run raises on bad input is reached before its folder is locked or changed.

An AST scan lists each ``raise`` of the modules that run a run's steps (``pipeline``, ``sweep``
and the logit metrics' per-example checks). :data:`SITES` knows every one of them: either the
case below that provokes it from a config or a command line, or why no input can reach it. A
raise site the table does not know fails :func:`test_every_raise_site_is_walked`, so a check
added later must come with its case. Each case runs with ``--force`` on a copy of one finished
tiny run and must be refused (exit 2, one line, the site's message) before ``RunFolder.claim``
is called, with the folder byte-identical afterwards.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import warnings
from pathlib import Path

import pytest

from interp_heads.cli import main
from interp_heads.store.folder import RunFolder
from tests.helpers import DATA, ROOT, TINY_CONFIG, finished_run, other_model_copy, snapshot

PACKAGE = ROOT / "interp_heads"
SCANNED = ["pipeline", "sweep", "metrics/logit_scores.py", "run/rankings.py"]
TASK = str(DATA / "tiny_echo.jsonl")
PAIRED = ("corrupted_prompt", "corrupted_answer", "distractors")  # what logit_diff can use


def _config(extra: str = "", old: str = "", new: str = "") -> str:
    return (TINY_CONFIG.replace(old, new) if old else TINY_CONFIG) + extra + "\n"


def _ablate(*flags: str) -> list[str]:
    return ["ablate", "--model", "tiny", "--task", TASK, "--no-filter", *flags, "--out", "RUN"]


def _rank(name: str) -> list[str]:
    return _ablate("--ranking", name, "--k", "1")


# case: a config (run --config C --out RUN --force) or an argv, and the message it must print
CASES: dict[str, tuple[str | list[str], str]] = {
    "filter keeps nothing": (
        _config('baseline = "needed"', old="filter_correct = false", new="filter_correct = true"),
        "no examples left to evaluate"),
    "filter keeps nothing, baseline all": (
        _config(old="filter_correct = false", new="filter_correct = true"),
        r"0 example\(s\) left after filtering"),
    "attribute, filter keeps nothing": (
        ["attribute", "--model", "tiny", "--task", TASK, "--out", "RUN"],
        "no example answered correctly"),
    "task listed twice": (_config(old=f'tasks = ["{TASK}"]', new=f'tasks = ["{TASK}", "{TASK}"]'),
                          "is listed twice"),
    "elbow of a ranking without scores": (_config('ranking = "BARECSV"\nelbow = true'),
                                          "elbow needs the ranking's scores"),
    "task name too long": (_config(old=TASK, new="x" * 300 + ".jsonl"), "task '.*x{40}"),
    "task file not json": (_config(old=TASK, new="JUNKTASK"), r"task '.*': "),
    "unknown metric": (_config(old='"chrf"', new='"bleu"'), "bleu"),
    "refine over the heads": (_config("refine = 99"), "refine=99 exceeds"),
    "stability_ks over the heads": (_config('analyses = ["stability"]\nstability_ks = [99]'),
                                    "stability_ks: "),
    "ranking without label": (_rank("NOLABEL"), "has no 'label' column"),
    "ranking without rows": (_rank("NOROWS"), r"has no rows \(truncated\?\)"),
    "ranking unreadable": (_rank("JUNKPARQUET"), "is not a readable parquet file"),
    "ranking of another task": (_rank("OTHERTASK"), "was made on task"),
    "ranking of a bad label": (_rank("BADLABEL"), r"ranking '.*': "),
    "ranking missing": (_rank("/no/such/ranking.csv"), "not found"),
    "ranking a link": (_rank("LINKCSV"), "is a symbolic link; refused"),
    "ranking a user folder": (_rank("USER"), "without ranking.csv or attribution.parquet"),
    "ranking rank not whole": (_rank("FRACRANK"), "is not a whole number"),
    "ranking rank twice": (_rank("DUPRANK"), "is given to two heads"),
    "ranking label disagrees": (_rank("DISAGREE"), "disagrees with its row's layer"),
    "ranking of another model": (_rank("OTHERMODEL"), "--allow-other-model"),
    "ranking of another task file": (
        ["ablate", "--model", "tiny", "--task", "SAMENAME", "--no-filter", "--ranking", "RUN",
         "--k", "1", "--out", "RUN"], "--allow-other-task"),
    "logit metric, last position": (_config('positions = "last"', old='"chrf"', new='"answer_logprob"'),
                                    "the logit metrics need positions = 'all'"),
    "logit_diff without distractors": (_config(old=f'"{TASK}"', new='"PLAINTASK"')
                                       .replace('"chrf"', '"logit_diff"').replace('"atp"', '"ablation_atp"'),
                                       "has no distractor"),
    "unknown model name": (_config(old='model = "tiny"', new='model = "no-such-model-xyz"'),
                           "no-such-model-xyz"),
    "no metric can score the format": (_config(old='["accuracy", "chrf"]',
                                               new='["cognitive_mirrors_accuracy"]'),
                                       "the study's rule cannot score"),
}  # fmt: skip

# every raise of the scanned modules: (module, function, message head) -> a case, or why none
UNREACHABLE = "no input reaches it: "
SITES: dict[tuple[str, str, str], str] = {
    ("pipeline/baseline_step.py", "_check_split", "task {} has no examples left to evaluate"): "filter keeps nothing",
    ("pipeline/baseline_step.py", "_check_split", "task {}: {} example(s) left after filter"): "filter keeps nothing, baseline all",
    ("pipeline/baseline_step.py", "_check_split", "task {}: no example answered correctly i"): "attribute, filter keeps nothing",
    ("pipeline/inputs.py", "load_tasks", "task {} is listed twice"): "task listed twice",
    ("pipeline/inputs.py", "check_inputs", "<one_line(exc)>"): "unknown model name",
    ("pipeline/plan_check.py", "_check_scorable", "task {}: {}"): "no metric can score the format",
    ("pipeline/given_ranking.py", "_from_file", "elbow needs the ranking's scores: rankin"): "elbow of a ranking without scores",
    ("pipeline/loading.py", "load_any_task", "task {}: a CogQA file with {} cognitive "): UNREACHABLE + "only 'interp-heads tasks' loads one task by this road, no run",
    ("pipeline/loading.py", "_checked", "task {} has no examples"): UNREACHABLE + "the task readers refuse a file without examples first",
    ("pipeline/loading.py", "_checked", "unknown task {} ({})"): UNREACHABLE + "the task readers name a missing file or task first",
    ("pipeline/loading.py", "_checked", "task {}: cannot read ({})"): "task name too long",
    ("pipeline/loading.py", "_checked", "task {}: {}"): "task file not json",
    ("pipeline/plan_check.py", "check_plan", "<one_line(exc)>"): "unknown metric",
    ("pipeline/plan_check.py", "_check_for_model", "refine={} exceeds the number of heads ({"): "refine over the heads",
    ("pipeline/plan_check.py", "_check_for_model", "stability_ks: {}"): "stability_ks over the heads",
    ("pipeline/rankings.py", "load_ranking", "ranking {} has no 'label' column"): "ranking without label",
    ("pipeline/rankings.py", "load_ranking", "ranking {} has {} (truncated?)"): "ranking without rows",
    ("run/rankings.py", "ranking_frame", "ranking {} is not a readable {} file ({}"): "ranking unreadable",
    ("pipeline/rankings.py", "load_ranking", "ranking {} was made on task(s) {}, not {"): "ranking of another task",
    ("pipeline/rankings.py", "load_ranking", "ranking {}: {}"): "ranking of a bad label",
    ("pipeline/rankings.py", "ranking_file", "ranking {} not found"): "ranking missing",
    ("pipeline/rankings.py", "ranking_file", "ranking {} is a symbolic link; refused ("): "ranking a link",
    ("pipeline/rankings.py", "ranking_file", "ranking {} is {} without ranking.csv or "): "ranking a user folder",
    ("pipeline/rankings.py", "_ranks", "{}: rank {} is not a whole number"): "ranking rank not whole",
    ("pipeline/rankings.py", "_ranks", "{}: rank {} is given to two heads"): "ranking rank twice",
    ("pipeline/rankings.py", "_check_labels_agree", "{}: label {} disagrees with its row's la"): "ranking label disagrees",
    ("pipeline/rankings.py", "check_ranking_source", "<notes[-1] + '; --allow-other-model mask"): "ranking of another model",
    ("pipeline/rankings.py", "check_ranking_source", "<notes[-1] + '; --allow-other-task uses "): "ranking of another task file",
    ("sweep/elbow.py", "elbow_k", "k = 'elbow' needs a ranking with scores "): UNREACHABLE + "the pipeline's elbow needs scores (given._from_file) first; the library's check",
    ("sweep/loop.py", "check_inputs", "the logit metrics need positions = 'all'"): "logit metric, last position",
    ("sweep/loop.py", "check_inputs", "task {} has no examples to evaluate{}"): UNREACHABLE + "the baseline split leaves none first; the library's check",
    ("sweep/loop.py", "check_inputs", "task {} is in the cognitive_mirrors form"): UNREACHABLE + "the pipeline sets fmt per task (task_formats); the library's check",
    ("sweep/loop.py", "_run_pending", "executor returned no result for {} unit("): UNREACHABLE + "an executor's fault, not input",
    ("sweep/config.py", "_checked", "unknown sweep option {}; the kinds' and "): UNREACHABLE + "the config refuses a key no section or variant declares first; the library's check",
    ("sweep/plan.py", "plan_conditions", "k={} must be in {}..{} (number of heads)"): UNREACHABLE + "check_ks refuses any k over the heads first; the library's check",
    ("metrics/logit_scores.py", "answer_tokens", "task {}: example {} has an empty answer"): UNREACHABLE + "the task readers refuse an empty answer first",
    ("metrics/logit_scores.py", "answer_tokens", "logit_diff: task {} has no distractor fo"): "logit_diff without distractors",
    ("metrics/logit_scores.py", "score_condition", "logit metrics mask every position of the"): UNREACHABLE + "check_inputs refuses positions first; the library's check",
    ("pipeline/artefacts.py", "check_reads", "step {} reads {}, which no earlier step "): UNREACHABLE + "the built-in steps' reads are all made first; a plugin step's is refused before the claim (test_step_declarations)",
    ("pipeline/artefacts.py", "check_reads", "step {} reads config section(s) {}, whic"): UNREACHABLE + "the built-in steps name real sections; a plugin step's typo is refused before the claim (test_step_declarations)",
    ("pipeline/artefacts.py", "outputs", "step {} declares it writes {} but return"): UNREACHABLE + "a step's code disagreeing with its declaration, not input (test_step_declarations)",
    ("pipeline/artefacts.py", "outputs", "step {} returned {}, not its declared ou"): UNREACHABLE + "a step's code disagreeing with its declaration, not input",
    ("pipeline/artefacts.py", "__getattr__", "step {} does not declare that it reads {"): UNREACHABLE + "a step's code reading what it does not declare, not input",
    ("pipeline/artefacts.py", "__setattr__", "a step's inputs are read-only; a step re"): UNREACHABLE + "a step's code writing to its inputs, not input",
    ("pipeline/config_view.py", "__getattr__", "<name>"): UNREACHABLE + "copy and pickle asking the view for a dunder it does not have, not input",
    ("pipeline/config_view.py", "__getattr__", "as a whole ({})"): UNREACHABLE + "a step's code reading a config section it does not declare, not input (test_step_config)",
    ("pipeline/config_view.py", "_check", "field {}"): UNREACHABLE + "a step's code reading a config section it does not declare, not input (test_step_config)",
    ("pipeline/config_view.py", "options", "options ({})"): UNREACHABLE + "a step's code reading a config section it does not declare, not input (test_step_config)",
    ("pipeline/config_view.py", "section", "section"): UNREACHABLE + "a step's code reading a config section it does not declare, not input (test_step_config)",
    ("pipeline/config_view.py", "__setattr__", "a step's config is read-only"): UNREACHABLE + "a step's code writing to its config, not input",
}  # fmt: skip


def _head(node: ast.Raise) -> str:
    """The first 40 characters of a raise's message, its placeholders written ``{}``."""
    arg = node.exc.args[0] if isinstance(node.exc, ast.Call) and node.exc.args else None
    if isinstance(arg, ast.Constant):
        text = str(arg.value)
    elif isinstance(arg, ast.JoinedStr):
        text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in arg.values)
    else:
        text = f"<{ast.unparse(arg)[:40]}>" if arg is not None else ""
    return text[:40]


def raise_sites() -> set[tuple[str, str, str]]:
    """Every ``raise X(...)`` in the scanned modules, as (module, function, message head)."""
    files = []
    for part in SCANNED:
        path = PACKAGE / part
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    sites = set()
    for file in files:
        module = file.relative_to(PACKAGE).as_posix()
        for fn in ast.walk(ast.parse(file.read_text())):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(fn):
                    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                        sites.add((module, fn.name, _head(node)))
    return sites


def test_every_raise_site_is_walked():
    found = raise_sites()
    new = sorted(found - set(SITES))
    assert not new, (
        "raise site(s) the walk does not know: add a case that provokes each before the folder "
        f"is claimed (or say why no input reaches it): {new}"
    )
    assert not sorted(set(SITES) - found), "SITES lists raise sites that are gone"
    cases = {c for c in SITES.values() if not c.startswith(UNREACHABLE)}
    assert cases == set(CASES), sorted(cases ^ set(CASES))


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return finished_run(tmp_path_factory.mktemp("walk"))


@pytest.fixture
def claims(monkeypatch) -> list:
    """Each ``RunFolder.claim`` call, recorded (the folder is taken and changed from there on)."""
    calls, claim = [], RunFolder.claim

    def spy(self, *args, **kwargs):
        calls.append(self.root)
        return claim(self, *args, **kwargs)

    monkeypatch.setattr(RunFolder, "claim", spy)
    return calls


@pytest.mark.parametrize("name", list(CASES))
def test_each_check_refuses_before_the_folder_is_claimed(name, finished, tmp_path, claims, capfd):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    spec, message = CASES[name]
    argv = _argv(spec, tmp_path, run)
    before = snapshot(run)
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main([*argv, "--force", "--quiet"])
    err = capfd.readouterr().err.split("\r")[-1]
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("interp-heads: error: "), err
    assert re.search(message, err), f"another check refused first: {err}"
    assert not claims, f"refused only after the folder was claimed: {err}"
    assert snapshot(run) == before


def _argv(spec, tmp: Path, run: Path) -> list[str]:
    """The case's command line, its placeholders made in ``tmp``."""
    files = _inputs(tmp, run)
    if isinstance(spec, str):
        for key, path in files.items():
            spec = spec.replace(f'"{key}"', json.dumps(path))
        (tmp / "c.toml").write_text(spec)
        return ["run", "--config", str(tmp / "c.toml"), "--out", str(run)]
    files["RUN"] = str(run)
    return [files.get(a, a) for a in spec]


def _inputs(tmp: Path, run: Path) -> dict[str, str]:
    """The files the cases name: rankings, tasks, folders (a copy of the run for the others)."""
    rows = [json.loads(line) for line in Path(TASK).read_text().splitlines() if line.strip()]
    made = {
        "NOLABEL": b"rank,head\n1,L0H0\n",
        "NOROWS": b"rank,label\n",
        "JUNKPARQUET": bytes(range(256)),
        "OTHERTASK": b"task,rank,label\nother,1,L0H0\n",
        "BADLABEL": b"rank,label\n1,L99H0\n",
        "FRACRANK": b"rank,label\n1.5,L0H0\n2,L0H1\n",
        "DUPRANK": b"rank,label\n1,L0H0\n1,L0H1\n",
        "DISAGREE": b"rank,label,layer,head\n1,L0H0,1,2\n",
        "BARECSV": (run / "ranking.csv").read_bytes(),
        "JUNKTASK": b"{not json\n",
        "PLAINTASK": _rows([{k: v for k, v in r.items() if k not in PAIRED} for r in rows]),
    }
    suffix = {"JUNKPARQUET": ".parquet", "JUNKTASK": ".jsonl"}
    files = {}
    for key, data in made.items():
        ext = suffix.get(key, ".jsonl" if "TASK" in key else ".csv")
        path = tmp / "inputs" / key / f"tiny_echo{ext}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        files[key] = str(path)
    (tmp / "user").mkdir()
    (tmp / "user" / "notes.txt").write_text("mine")
    files["USER"] = str(tmp / "user")
    (tmp / "linked").mkdir()  # a folder whose ranking.csv is a link
    (tmp / "linked" / "ranking.csv").symlink_to(files["BARECSV"])
    files["LINKCSV"] = str(tmp / "linked")
    files["OTHERMODEL"] = other_model_copy(run, tmp)
    changed = [{**rows[0], "answer": "changed"}, *rows[1:]]
    files["SAMENAME"] = str(tmp / "inputs" / "same" / "tiny_echo.jsonl")
    Path(files["SAMENAME"]).parent.mkdir()
    Path(files["SAMENAME"]).write_bytes(_rows(changed))
    return files


def _rows(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()
