"""A case table of malformed input fed to the CLI (tiny model): tasks, configs, rankings, damaged folders.

Every case must end with exit status 2, exactly one stderr line ``interp-heads: error: ...``, no
traceback, and leave an earlier finished run folder byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from pathlib import Path

import pytest

from interp_heads.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
TASK = str(DATA / "tiny_echo.jsonl")
CONFIG = (DATA / "tiny.toml").read_text().replace("tests/data/", f"{DATA}/")
ROW = json.loads(Path(TASK).read_text().splitlines()[0])
JUNK = bytes(range(256)) * 8

TASKS: dict[str, bytes | tuple[str, bytes]] = {
    "empty": b"",
    "blank lines": b"\n\n  \n",
    "binary": JUNK,
    "invalid utf-8": b'{"id": "a", "prompt": "\xff\xfe", "answer": "x"}\n',
    "json array": json.dumps([ROW]).encode(),
    "null row": b"null\n",
    "number row": b"3\n",
    "missing prompt": json.dumps({k: v for k, v in ROW.items() if k != "prompt"}).encode(),
    "missing answer": json.dumps({k: v for k, v in ROW.items() if k != "answer"}).encode(),
    "prompt is a number": json.dumps({**ROW, "prompt": 3}).encode(),
    "aliases not a list": json.dumps({**ROW, "aliases": 3}).encode(),
    "duplicate ids": (json.dumps(ROW) + "\n" + json.dumps(ROW)).encode(),
    "truncated row": json.dumps(ROW).encode()[:40],
    "prompt too long": json.dumps({**ROW, "prompt": "x " * 400}).encode(),
    # issue 24: answers with nothing to check, mixed tasks, special tokens, CSV headers
    "answer is only punctuation": json.dumps({**ROW, "answer": "..."}).encode(),
    "answer is a zero-width space": json.dumps({**ROW, "answer": "\u200b"}).encode(),
    "lone surrogate in answer": json.dumps({**ROW, "answer": "\ud800"}).encode(),
    "two tasks in one file": (
        json.dumps(ROW) + "\n" + json.dumps({**ROW, "id": "z", "task": "other"})
    ).encode(),
    "special token in prompt": json.dumps({**ROW, "prompt": "Say <|im_end|> cat"}).encode(),
    "csv repeats answer": (".csv", b"prompt,answer,answer\nRepeat: cat,cat,dog\n"),
    "csv Prompt header": (".csv", b"Prompt,answer\nRepeat: cat,cat\n"),
    "csv spaced header": (".csv", b" prompt,answer\nRepeat: cat,cat\n"),
    "csv with semicolons": (".csv", b"prompt;answer\nRepeat: cat;cat\n"),
    "task is a folder": ("/", b""),
    "task is /dev/null": ("/dev/null", b""),
}

CONFIGS: dict[str, str] = {
    "binary": JUNK.decode("latin-1"),
    "ks empty": CONFIG.replace("ks = [2, 4, 8]", "ks = []"),
    "ks float": CONFIG.replace("ks = [2, 4, 8]", "ks = [1.5]"),
    "ks too big": CONFIG.replace("ks = [2, 4, 8]", "ks = [2, 99]"),
    "ks a number": CONFIG.replace("ks = [2, 4, 8]", "ks = 3"),
    "tasks empty": CONFIG.replace(f'tasks = ["{DATA}/tiny_echo.jsonl"]', "tasks = []"),
    "unknown task": CONFIG.replace(str(DATA / "tiny_echo.jsonl"), "no_such_task"),
    "task listed twice": CONFIG.replace(
        f'tasks = ["{DATA}/tiny_echo.jsonl"]',
        f'tasks = ["{DATA}/tiny_echo.jsonl", "{DATA}/tiny_echo.jsonl"]',
    ),
    "n_rank negative": CONFIG.replace("n_rank = 4", "n_rank = -1"),
    "n_eval zero": CONFIG.replace("n_eval = 8", "n_eval = 0"),
    "max_new_tokens zero": CONFIG.replace("max_new_tokens = 4", "max_new_tokens = 0"),
    "max_new_tokens beyond context": CONFIG.replace("max_new_tokens = 4", "max_new_tokens = 500"),
    "batch_size zero": CONFIG.replace("batch_size = 8", "batch_size = 0"),
    "unknown metric": CONFIG.replace('"chrf"', '"bleu"'),
    "unknown selection": CONFIG.replace('"layermatched"', '"everything"'),
    "unknown ablation": CONFIG.replace('ablation = "mean"', 'ablation = "noise"'),
    "unknown attribution": CONFIG.replace('attribution = "atp"', 'attribution = "magic"'),
    "bad fmt": CONFIG + 'fmt = "xml"\n',
    "scaled_ks > 1": CONFIG + "scaled_ks = [2.0]\n",
    "refine zero": CONFIG + "refine = 0\n",
    "threads zero": CONFIG + "threads = 0\n",
    "device gpu": CONFIG + 'device = "gpu"\n',
    "model a number": CONFIG.replace('model = "tiny"', "model = 3"),
    "unknown model": CONFIG.replace('model = "tiny"', 'model = "no-such-model-xyz"'),
    "seeds a bool": CONFIG.replace("seeds = 2", "seeds = true"),
    "run table not a table": "run = 3\n",
    "n_rank leaves nothing": CONFIG.replace("n_rank = 4", "n_rank = 16"),
    # issue 24
    "metrics empty": CONFIG.replace('metrics = ["accuracy", "chrf"]', "metrics = []"),
    "selections empty": CONFIG.replace(
        'selections = ["topk", "randomk", "layermatched"]', "selections = []"
    ),
    "seeds 100000": CONFIG.replace("seeds = 2", "seeds = 100000"),
    "threads 99999": CONFIG + "threads = 99999\n",
    "model empty": CONFIG.replace('model = "tiny"', 'model = ""'),
    "missing comet model path": CONFIG.replace('"chrf"', '"comet"')
    + 'comet_model = "/no/such/comet/checkpoint"\n',
    # refused by the first step of a --force rerun: the earlier run must come back as it was
    "filter keeps nothing": CONFIG.replace("filter_correct = false", "filter_correct = true"),
    "exact_layers with atp": CONFIG + "exact_layers = 1\n",
    "exact_layers with zero ablation": CONFIG.replace(
        'attribution = "atp"', 'attribution = "auto"'
    ).replace('ablation = "mean"', 'ablation = "zero"')
    + "exact_layers = 1\n",
}

# issue 24: flags (argv after ``interp-heads``; RUN is the finished folder)
ARGV: dict[str, list[str]] = {
    "threads 99999": ["ablate", "--model", "tiny", "--task", TASK, "--heads", "L0H0", "--threads", "99999", "--no-filter", "--out", "RUN"],
    "heads empty": ["ablate", "--model", "tiny", "--task", TASK, "--heads", "", "--no-filter", "--out", "RUN"],
    "out empty": ["ablate", "--model", "tiny", "--task", TASK, "--heads", "L0H0", "--no-filter", "--out", ""],
    "model empty": ["ablate", "--model", "", "--task", TASK, "--heads", "L0H0", "--no-filter", "--out", "RUN"],
    "ranking of another task": ["ablate", "--model", "tiny", "--task", TASK, "--ranking", "OTHER", "--k", "1", "--no-filter", "--out", "RUN"],
    "missing comet model path": ["ablate", "--model", "tiny", "--task", TASK, "--heads", "L0H0", "--metrics", "comet", "--comet-model", "/no/such/ckpt", "--no-filter", "--out", "RUN"],
    "seeds 100000": ["ablate", "--model", "tiny", "--task", TASK, "--heads", "L0H0", "--seeds", "100000", "--no-filter", "--out", "RUN"],
    "exact layers negative": ["attribute", "--model", "tiny", "--task", TASK, "--exact-layers", "-1", "--out", "RUN"],
    "not a run folder": ["ablate", "--model", "tiny", "--task", TASK, "--heads", "L0H0", "--no-filter", "--out", "USER"],
    "attribute into a user folder": ["attribute", "--model", "tiny", "--task", TASK, "--no-filter", "--out", "USER"],
    "out is a file": ["ablate", "--model", "tiny", "--task", TASK, "--heads", "L0H0", "--no-filter", "--out", "FILE"],
    "linked conditions folder": ["ablate", "--model", "tiny", "--task", TASK, "--heads", "L0H0", "--no-filter", "--out", "LINKED"],
    "report of a user folder": ["report", "USER"],
    "exact layers not a number": ["attribute", "--model", "tiny", "--task", TASK, "--exact-layers", "one", "--out", "RUN"],
    "ranking task unknown": ["ablate", "--model", "tiny", "--task", TASK, "--ranking", "RUN", "--ranking-task", "nope", "--k", "1", "--no-filter", "--out", "RUN"],
}  # fmt: skip

RANKINGS: dict[str, tuple[str, bytes]] = {
    "empty csv": ("r.csv", b""),
    "header only": ("r.csv", b"task,rank,label\n"),
    "no label column": ("r.csv", b"rank,head\n1,L0H0\n"),
    "empty labels": ("r.csv", b"rank,label\n1,\n2,\n"),
    "bad label": ("r.csv", b"rank,label\n1,L99H0\n"),
    "label not a head": ("r.csv", b"rank,label\n1,hello\n"),
    "duplicate labels": ("r.csv", b"rank,label\n1,L0H0\n2,L0H0\n"),
    "binary csv": ("r.csv", JUNK),
    "invalid utf-8 csv": ("r.csv", b"rank,label\n1,L0H\xff\n"),
    "truncated csv": ("r.csv", b"task,rank,label,layer\ntiny_echo,1,L1H1,1\ntiny_echo,2,"),
    "other task only": ("r.csv", b"task,rank,label\na,1,L0H0\nb,1,L0H1\n"),
    "junk parquet": ("r.parquet", JUNK),
    "empty parquet": ("r.parquet", b""),
}

DAMAGED: dict[str, tuple[str, bytes]] = {
    "summary.parquet junk": ("summary.parquet", JUNK),
    "attribution.parquet truncated": ("attribution.parquet", b"PAR1\x00\x00"),
    "manifest.json junk": ("manifest.json", JUNK),
    "baseline.csv junk": ("baseline.csv", JUNK),
    "generations.jsonl junk": ("generations.jsonl", b'{"task": "t", "k":\n'),
}


def _snapshot(folder: Path) -> dict:
    return {
        p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    (root / "c.toml").write_text(CONFIG)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert (
            main(["run", "--config", str(root / "c.toml"), "--out", str(root / "run"), "--quiet"])
            == 0
        )
    return root / "run"


def _case(kind: str, name: str, tmp: Path, run: Path) -> tuple[list[str], Path]:
    """The argv of one case and the folder that must stay byte-identical."""
    if kind == "argv":
        (tmp / "user").mkdir()
        (tmp / "user" / "notes.txt").write_text("mine")
        (tmp / "other.csv").write_text("task,rank,label\nother,1,L0H0\n")
        (tmp / "notes.txt").write_text("mine")
        linked = tmp / "linked"  # a run folder whose conditions/ points outside it
        shutil.copytree(run, linked)
        shutil.rmtree(linked / "conditions")
        (tmp / "outside").mkdir()
        (linked / "conditions").symlink_to(tmp / "outside", target_is_directory=True)
        subst = {"RUN": str(run), "USER": str(tmp / "user"), "OTHER": str(tmp / "other.csv")}
        subst.update(FILE=str(tmp / "notes.txt"), LINKED=str(linked))
        return [subst.get(a, a) for a in ARGV[name]], run
    if kind == "task":
        data = TASKS[name]
        suffix, data = data if isinstance(data, tuple) else (".jsonl", data)
        path = tmp / f"t{suffix}"
        if suffix == "/":
            path = tmp / "folder.jsonl"
            path.mkdir()
        elif suffix.startswith("/dev/"):
            path = Path(suffix)
        else:
            path.write_bytes(data)
        return [
            "ablate",
            "--model",
            "tiny",
            "--task",
            str(path),
            "--heads",
            "L0H0",
            "--no-filter",
            "--out",
            str(run),
        ], run
    if kind == "config":
        (tmp / "c.toml").write_bytes(CONFIGS[name].encode("latin-1"))
        return ["run", "--config", str(tmp / "c.toml"), "--out", str(run), "--force"], run
    if kind == "ranking":
        fname, data = RANKINGS[name]
        (tmp / fname).write_bytes(data)
        return [
            "ablate",
            "--model",
            "tiny",
            "--task",
            TASK,
            "--ranking",
            str(tmp / fname),
            "--k",
            "1",
            "--no-filter",
            "--out",
            str(run),
        ], run
    fname, data = DAMAGED[name]
    (run / fname).write_bytes(data)
    return ["report", str(run)], run


CASES = (
    [("task", n) for n in TASKS]
    + [("config", n) for n in CONFIGS]
    + [("ranking", n) for n in RANKINGS]
    + [("damaged folder", n) for n in DAMAGED]
    + [("argv", n) for n in ARGV]
)


@pytest.mark.parametrize(("kind", "name"), CASES, ids=[f"{k}: {n}" for k, n in CASES])
def test_malformed_input_one_line_exit_2_no_damage(kind, name, finished, tmp_path, capfd):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    argv, keep = _case(kind, name, tmp_path, run)
    before = _snapshot(keep)
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(argv)
    err = capfd.readouterr().err
    shown = err.split("\r")[-1]  # what a terminal shows once progress bars are cleared
    assert rc == 2, err
    assert "Traceback" not in err, err
    assert shown.count("\n") == 1 and shown.startswith("interp-heads: error: "), err
    assert _snapshot(keep) == before
    named = {
        "task": "task '" if not name.startswith("task is") else "t",
        "ranking": "ranking '",
        "damaged folder": DAMAGED.get(name, ("",))[0],
    }.get(kind, "")
    assert named in shown, f"the message does not name the bad input: {shown}"


def test_the_table_covers_each_kind():
    assert len(TASKS) >= 25 and len(CONFIGS) >= 36 and len(RANKINGS) >= 10 and len(DAMAGED) >= 5
    assert len(ARGV) >= 15
    assert all(text != CONFIG for text in CONFIGS.values())  # every replacement applied
