"""A case table of malformed input fed to the CLI (tiny model): tasks, configs, rankings, damaged folders.

Every case must end with exit status 2, exactly one stderr line ``interp-heads: error: ...``, no
traceback, and leave an earlier finished run folder byte-identical.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import pytest

from interp_heads.cli import main
from tests.helpers import DATA, TINY_CONFIG, finished_run, other_model_copy, snapshot

TASK = str(DATA / "tiny_echo.jsonl")
CONFIG = TINY_CONFIG
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
    # answers with nothing to check, mixed tasks, special tokens, CSV headers
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
    # values a careless or hostile file holds: too deep, too long
    "meta nested too deeply": (
        b'{"id": "a", "prompt": "Repeat: cat", "answer": "cat", "meta": {"x": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}}\n"
    ),
    "csv field over 131072 characters": (".csv", b"prompt,answer\n" + b"x" * 200_000 + b",cat\n"),
    "csv field over the 1,000,000 cap": (".csv", b"prompt,answer\n" + b"x" * 1_000_001 + b",cat\n"),
    "prompt of 20 MB": json.dumps({**ROW, "prompt": "x " * 10_000_000}).encode(),
    "prompt of 500,000 characters": json.dumps({**ROW, "prompt": "xy " * 166_667}).encode(),
    "task is a FIFO": ("|fifo", b""),
    "task is /dev/zero": ("/dev/zero", b""),
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
    # empty lists, counts out of range, missing models
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
    # numbers that are no setting, files that are no checkpoint, nothing at all
    "scale_factor nan": CONFIG.replace('ablation = "mean"', 'ablation = "scale"')
    + "scale_factor = nan\n",
    "scale_factor inf": CONFIG.replace('ablation = "mean"', 'ablation = "scale"')
    + "scale_factor = inf\n",
    "scale_factor -inf": CONFIG + "scale_factor = -inf\n",
    "scaled_ks nan": CONFIG + "scaled_ks = [nan]\n",
    "seed 2**64": CONFIG + "seed = 18446744073709551616\n",
    "empty config": "",
    "only an empty table": "[sweep]\n",
    "nested too deeply": "a = " + "[" * 100_000 + "]" * 100_000 + "\n",
    "comet_model /etc/passwd": CONFIG.replace('"chrf"', '"comet"')
    + 'comet_model = "/etc/passwd"\n',
    "comet_model a folder": CONFIG.replace('"chrf"', '"comet"') + f'comet_model = "{DATA}"\n',
}

# flags (argv after ``interp-heads``; RUN is the finished folder)
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
    # NEW: a fresh folder, so only the check itself can refuse (and the folder is never made)
    "scale factor nan": ["ablate", "--model", "tiny", "--task", TASK, "--heads", "L0H0", "--ablation", "scale", "--scale-factor", "nan", "--no-filter", "--out", "NEW"],
    "scale factor inf": ["ablate", "--model", "tiny", "--task", TASK, "--heads", "L0H0", "--ablation", "scale", "--scale-factor", "inf", "--no-filter", "--out", "NEW"],
    "heads and ranking together": ["ablate", "--model", "tiny", "--task", TASK, "--heads", "L0H0", "--ranking", "RUN", "--no-filter", "--out", "NEW"],
    "ranking of another model": ["ablate", "--model", "tiny", "--task", TASK, "--ranking", "OTHERMODEL", "--k", "1", "--no-filter", "--out", "NEW"],
    "ranking of another file of the task": ["ablate", "--model", "tiny", "--task", "SAMENAME", "--ranking", "RUN", "--k", "1", "--no-filter", "--out", "NEW"],
    "ranking is /dev/zero": ["ablate", "--model", "tiny", "--task", TASK, "--ranking", "/dev/zero", "--k", "1", "--no-filter", "--out", "NEW"],
    "ranking is a FIFO": ["ablate", "--model", "tiny", "--task", TASK, "--ranking", "FIFO", "--k", "1", "--no-filter", "--out", "NEW"],
    "model /dev/zero": ["ablate", "--model", "/dev/zero", "--task", TASK, "--heads", "L0H0", "--no-filter", "--out", "NEW"],
    "config is a folder": ["run", "--config", "USER", "--out", "NEW"],
    "config is a FIFO": ["run", "--config", "FIFO", "--out", "NEW"],
    "config is /dev/zero": ["run", "--config", "/dev/zero", "--out", "NEW"],
    "tasks build --bogus": ["tasks", "build", "--bogus"],
    "tasks build --seed x": ["tasks", "build", "--seed", "x"],
    "score through a linked scores folder": ["score", "LINKEDSCORES", "--metrics", "chrf"],
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
    "non-numeric rank": ("r.csv", b"rank,label\n1,L0H0\nfirst,L0H1\n"),
    "empty rank": ("r.csv", b"rank,label\n,L0H0\n2,L0H1\n"),
    "fractional rank": ("r.csv", b"rank,label\n1.5,L0H0\n2,L0H1\n"),
    "infinite rank": ("r.csv", b"rank,label\ninf,L0H0\n2,L0H1\n"),
    "duplicate rank": ("r.csv", b"rank,label\n1,L0H0\n1,L0H1\n"),
    "label disagrees with layer and head": (
        "r.csv",
        b"rank,label,layer,head\n1,L0H0,1,2\n2,L0H1,0,1\n",
    ),
    "layer not a number": ("r.csv", b"rank,label,layer,head\n1,L0H0,zero,0\n"),
}

DAMAGED: dict[str, tuple[str, bytes]] = {
    "summary.parquet junk": ("summary.parquet", JUNK),
    "attribution.parquet truncated": ("attribution.parquet", b"PAR1\x00\x00"),
    "manifest.json junk": ("manifest.json", JUNK),
    "baseline.csv junk": ("baseline.csv", JUNK),
    "generations.jsonl junk": ("generations.jsonl", b'{"task": "t", "k":\n'),
    "manifest.json nested too deeply": (
        "manifest.json",
        b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ),
    "heads/stability.csv junk": ("heads/stability.csv", JUNK),
    "heads/stability.csv of other columns": ("heads/stability.csv", b"a,b\n1,2\n"),
    "heads/specificity.csv junk": ("heads/specificity.csv", b"source,task\nx,y\n"),
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    return finished_run(tmp_path_factory.mktemp("fuzz"))


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
        subst.update(FILE=str(tmp / "notes.txt"), LINKED=str(linked), NEW=str(tmp / "new"))
        subst.update(OTHERMODEL=other_model_copy(run, tmp), SAMENAME=_same_name(tmp))
        subst.update(FIFO=_fifo(tmp), LINKEDSCORES=_linked_scores(run, tmp))
        return [subst.get(a, a) for a in ARGV[name]], run
    if kind == "task":
        data = TASKS[name]
        suffix, data = data if isinstance(data, tuple) else (".jsonl", data)
        path = tmp / f"t{suffix}"
        if suffix == "/":
            path = tmp / "folder.jsonl"
            path.mkdir()
        elif suffix == "|fifo":
            path = Path(_fifo(tmp))
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
    (run / fname).parent.mkdir(exist_ok=True)
    (run / fname).write_bytes(data)
    return ["report", str(run)], run


def _fifo(tmp: Path) -> str:
    """A named pipe nobody writes to: reading it would block forever."""
    path = tmp / "pipe.jsonl"
    if not path.exists():
        os.mkfifo(path)
    return str(path)


def _same_name(tmp: Path) -> str:
    """Another file named like the run's task (``tiny_echo.jsonl``), one answer changed."""
    rows = [json.loads(line) for line in Path(TASK).read_text().splitlines()]
    rows[0]["answer"] = "changed"
    (tmp / "same").mkdir()
    path = tmp / "same" / Path(TASK).name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _linked_scores(run: Path, tmp: Path) -> str:
    """A copy of the run whose ``scores/`` is a link to a folder outside it."""
    linked = tmp / "linked_scores"
    shutil.copytree(run, linked)
    (tmp / "elsewhere").mkdir()
    (tmp / "elsewhere" / "chrf.csv").write_text("precious")
    (linked / "scores").symlink_to(tmp / "elsewhere", target_is_directory=True)
    return str(linked)


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
    before = snapshot(keep)
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(argv)
    err = capfd.readouterr().err
    shown = err.split("\r")[-1]  # what a terminal shows once progress bars are cleared
    assert rc == 2, err
    assert "Traceback" not in err, err
    assert shown.count("\n") == 1 and shown.startswith("interp-heads: error: "), err
    assert snapshot(keep) == before
    assert not (tmp_path / "new").exists(), "a refused command made its output folder"
    if (tmp_path / "elsewhere").exists():
        assert [p.name for p in (tmp_path / "elsewhere").iterdir()] == ["chrf.csv"]
        assert (tmp_path / "elsewhere" / "chrf.csv").read_text() == "precious"
    named = {
        "task": "task '" if not name.startswith("task is") else "t",
        "ranking": "ranking '",
        "damaged folder": DAMAGED.get(name, ("",))[0],
    }.get(kind, "")
    assert named in shown, f"the message does not name the bad input: {shown}"


def test_the_table_covers_each_kind():
    assert len(TASKS) >= 32 and len(CONFIGS) >= 46 and len(RANKINGS) >= 20 and len(DAMAGED) >= 9
    assert len(ARGV) >= 29
    assert all(text != CONFIG for text in CONFIGS.values())  # every replacement applied
