"""Gradient batches capped by the free memory: cut only where they would not fit, the scores of a
capped run equal to one batch's, a prompt that cannot fit refused in one line."""

from __future__ import annotations

import pytest
import torch

from interp_heads.attribution import attribute_heads
from interp_heads.attribution import memory as mem
from interp_heads.attribution.inputs import make_batches
from interp_heads.errors import InputError
from interp_heads.tasks.schema import Task
from interp_heads.testing.tiny import PATCHING_EXAMPLES


@pytest.fixture
def task():
    return Task("t", list(PATCHING_EXAMPLES))


def _widths(batches):
    return [(len(b), b.clean.shape[1]) for b in batches]


def test_batches_are_cut_where_their_width_allows_fewer_rows(tiny, task):
    whole = make_batches(tiny, task, batch_size=8)
    same = make_batches(tiny, task, batch_size=8, rows_for_width=lambda w: 8)
    assert _widths(same) == _widths(whole)
    assert all(torch.equal(a.clean, b.clean) for a, b in zip(same, whole, strict=True))
    widest = whole[-1].clean.shape[1]
    cut = make_batches(tiny, task, batch_size=8, rows_for_width=lambda w: 1 if w == widest else 2)
    assert len(cut) > len(whole)
    assert all(n <= (1 if w == widest else 2) for n, w in _widths(cut))
    assert sorted(i for b in cut for i in b.ids) == sorted(e.id for e in task)


def test_gradient_rows_follow_the_free_memory(tiny, monkeypatch):
    need = mem.row_bytes(tiny.cfg, 10)
    monkeypatch.setattr(mem, "free_bytes", lambda device: int(3.5 * need / mem.FRACTION))
    rows = mem.gradient_rows(tiny, 8)
    assert rows(10) == 3 and mem.gradient_rows(tiny, 2)(10) == 2
    assert rows(5) > 3  # shorter prompts: more of them
    with pytest.raises(InputError, match=r"one prompt of 40 tokens needs about .* GB") as exc:
        rows(40)
    assert "\n" not in str(exc.value)
    monkeypatch.setattr(mem, "free_bytes", lambda device: None)
    assert mem.gradient_rows(tiny, 8) is None


def test_a_capped_run_warns_and_scores_as_one_batch(tiny, task, monkeypatch):
    free = {"bytes": 10**12}
    monkeypatch.setattr(mem, "free_bytes", lambda device: free["bytes"])
    whole = attribute_heads(tiny, task, "gradxact", batch_size=8)
    assert "memory_capped_rows" not in whole.provenance
    widest = make_batches(tiny, task, batch_size=8)[-1].clean.shape[1]
    free["bytes"] = int(2 * mem.row_bytes(tiny.cfg, widest) / mem.FRACTION) + 1  # two of the widest
    with pytest.warns(UserWarning, match=r"gradient batches of \d+ to \d+ examples, not 8"):
        capped = attribute_heads(tiny, task, "gradxact", batch_size=8)
    sizes = capped.provenance["memory_capped_rows"]
    assert sizes[-1] <= 2 and len(sizes) > 1 and sum(sizes) == len(task)
    torch.testing.assert_close(capped.scores, whole.scores, atol=1e-5, rtol=1e-4)
    exact = attribute_heads(tiny, task, "exact", batch_size=8)  # no backward pass: never cut
    assert "memory_capped_rows" not in exact.provenance


@pytest.mark.parametrize("batch_size", [1, 8])
def test_a_prompt_that_cannot_fit_alone_is_refused_before_any_pass(
    tiny, task, monkeypatch, batch_size
):
    monkeypatch.setattr(mem, "free_bytes", lambda device: 1)  # one byte: no prompt fits
    with pytest.raises(InputError, match=r"one prompt of \d+ tokens needs about"):
        attribute_heads(tiny, task, "gradxact", batch_size=batch_size)
