"""``load_model(threads=...)``: torch's CPU threads set as the command line sets them."""

from __future__ import annotations

import pytest
import torch

from interp_heads.model_info import model_info
from interp_heads.models import threads
from interp_heads.models.load import load_model


@pytest.fixture(autouse=True)
def _torch_threads_restored(monkeypatch, tmp_path):
    monkeypatch.setattr(threads, "_registry", lambda: tmp_path / "procs")  # this test's own
    monkeypatch.setattr(threads, "_state", {"explicit": None, "registered": None})
    before = torch.get_num_threads()
    yield
    threads.unregister()
    torch.set_num_threads(before)


def test_default_shares_the_cores_as_the_command_line(monkeypatch):
    monkeypatch.setattr(threads, "fair_share", lambda: 1)
    torch.set_num_threads(2)
    model = load_model("tiny", device="cpu")
    assert torch.get_num_threads() == 1  # the fair share, not torch's one per core
    assert threads._state["registered"] is not None  # counted by other interp-heads processes
    assert model_info(model).threads_watch  # re-checked while it runs


def test_an_explicit_count_is_set_and_kept(monkeypatch):
    monkeypatch.setattr(threads, "fair_share", lambda: 2)
    load_model("tiny", device="cpu", threads=1)
    threads.rebalance()
    assert torch.get_num_threads() == 1 and threads._state["registered"] is None


def test_none_leaves_torch_alone():
    torch.set_num_threads(2)
    model = load_model("tiny", device="cpu", threads=None)
    assert torch.get_num_threads() == 2
    assert not model_info(model).threads_watch


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "many", 10**6])
def test_bad_thread_counts_are_refused_before_loading(bad, untyped):
    with pytest.raises(ValueError, match="threads"):
        load_model("no-such-model", threads=bad)
