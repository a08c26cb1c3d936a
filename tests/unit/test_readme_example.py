"""The README's "In Python" example runs, on the tiny model with a tiny task patched in.

The code is read from ``README.md`` (``interp_heads.testing.readme``), so a renamed function, a
changed argument or a broken call in the example fails here. Only what loads the model and the
task is replaced: the tiny model with 8 heads per layer (24 heads: the example masks 16) and the
tiny echo task. ``filter_correct`` runs for real, but a random model answers almost nothing
correctly, so the patched version keeps the whole task when too few examples survive.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import interp_heads
from interp_heads.model_info import set_source
from interp_heads.tasks import load_task
from interp_heads.tasks.schema import Task
from interp_heads.testing.readme import readme_example
from interp_heads.testing.tiny import tiny_model

DATA = Path(__file__).parents[1] / "data"


def _tiny_task(name: str) -> Task:
    """48 rows of the tiny echo task (its 16, three times, with new ids), under ``name``."""
    rows = load_task(str(DATA / "tiny_echo.jsonl")).examples
    exs = [dataclasses.replace(e, id=f"{e.id}_{i}") for i in range(3) for e in rows]
    return Task(name, exs, meta={"fmt": "plain"})


def test_readme_example_runs(monkeypatch, tmp_path, capsys):
    code = readme_example()
    assert "load_model()" in code and 'load_task("knowledge_recall")' in code
    real_filter = interp_heads.filter_correct
    seen = {}

    def fake_load(*args, **kw):
        model = tiny_model(n_heads=8)
        set_source(model, spec="tiny", sha256=None)
        return model

    def fake_filter(model, task, **kw):
        kept = real_filter(model, task, **kw)
        seen["filter"] = (len(task), kw)
        return kept if len(kept) >= 20 else task

    monkeypatch.setattr(interp_heads, "load_model", fake_load)
    monkeypatch.setattr(interp_heads, "load_task", _tiny_task)
    monkeypatch.setattr(interp_heads, "filter_correct", fake_filter)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert seen["filter"][0] == 40  # only the subset is filtered, not the whole task
    assert out.startswith("HeadScores(method='atp', task='knowledge_recall', 3x8 heads, 16 ex")
    assert "top 16 heads masked: " in out and "random 16 heads masked: " in out
