"""Probe attribution on the embedded SmolLM2: the four built-in tasks are told apart above chance."""

from __future__ import annotations

import pytest

from interp_heads.attribution.probe import ProbeSettings, probe_heads
from interp_heads.tasks import BUILTIN_TASKS, load_task

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("position", "kind"), [("answer", "mlp"), ("last", "linear")])
def test_probe_tells_the_four_tasks_apart(smollm, position, kind):
    tasks = [load_task(name).subset(n=16) for name in BUILTIN_TASKS]
    fmts = {t.name: t.fmt for t in tasks}
    out = probe_heads(smollm, tasks, fmts, position=position, settings=ProbeSettings(kind=kind))
    p = out[tasks[0].name].provenance["probe"]
    assert p["n_heldout"] == 16 and p["chance"] == 0.25
    assert p["heldout_accuracy"] > p["chance"] + 0.25, p
    n = smollm.cfg.n_layers * smollm.cfg.n_heads
    for scores in out.values():
        assert scores.scores.shape == (smollm.cfg.n_layers, smollm.cfg.n_heads)
        assert len(set(scores.top_labels(n))) == n and bool((scores.scores >= 0).all())
