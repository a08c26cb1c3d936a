"""The shared generation store never trusts a damaged, linked or mismatched entry silently: it is
warned about (the file named), ignored and generated again; a linked store folder is refused."""

from __future__ import annotations

import json
import os

import pytest

from interp_heads.errors import PipelineError
from interp_heads.store import StoreWarning, write_entry
from interp_heads.store.resume import generation_key
from interp_heads.store.shared import SharedGenerations

KEY = "0123456789abcdef0123456789abcdef"
OTHER = "fedcba9876543210fedcba9876543210"


@pytest.fixture
def store(tmp_path):
    s = SharedGenerations(tmp_path / "shared")
    s.put(KEY, ["a", "b"])
    return s


def test_an_entry_written_is_read_back(store):
    assert store.get(KEY, 2) == ["a", "b"] and store.stats["hits"] == 1
    assert store.get(OTHER, 2) is None


def test_a_damaged_entry_is_warned_about_and_ignored(store):
    path = store.path(KEY)
    path.write_text(path.read_text().replace('"a"', '"z"'))  # edited: the checksum disagrees
    with pytest.warns(StoreWarning, match="checksum"):
        assert store.get(KEY, 2) is None
    path.write_bytes(path.read_bytes()[:20])  # truncated
    with pytest.warns(StoreWarning, match="not JSON"):
        assert store.get(KEY, 2) is None


def test_an_entry_under_another_name_or_of_another_size_is_ignored(store):
    write_entry(store.path(OTHER), {"key": KEY, "generations": ["a", "b"]})
    with pytest.warns(StoreWarning, match="another key"):
        assert store.get(OTHER, 2) is None
    with pytest.warns(StoreWarning, match="list of 3"):
        assert store.get(KEY, 3) is None


def test_a_linked_entry_is_refused_and_its_target_never_written(store, tmp_path):
    target = tmp_path / "elsewhere.json"
    write_entry(target, {"key": OTHER, "generations": ["x", "y"]})
    before = target.read_bytes()
    os.symlink(target, store.path(OTHER))
    with pytest.warns(StoreWarning, match="symbolic link"):
        assert store.get(OTHER, 2) is None
    store.put(OTHER, ["p", "q"])  # the link is replaced by a file, its target untouched
    assert target.read_bytes() == before and not store.path(OTHER).is_symlink()
    assert json.loads(store.path(OTHER).read_text())["generations"] == ["p", "q"]


def test_a_linked_store_folder_is_refused(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "shared")
    with pytest.raises(PipelineError, match="symbolic link"):
        SharedGenerations(tmp_path / "shared")
    (tmp_path / "own").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "own" / "generations")
    with pytest.raises(PipelineError, match="symbolic link"):
        SharedGenerations(tmp_path / "own")


def test_a_key_that_is_no_digest_is_refused(store):
    with pytest.raises(ValueError, match="not a generation key"):
        store.path("../../etc/passwd")


def test_the_key_reads_the_mask_only_when_a_head_is_masked():
    args = ({"spec": "m"}, "prompts", {"max_new_tokens": 4}, "cpu")

    def key(heads, ablation):
        fp, prompts, gen, dev = args
        return generation_key(fp, prompts, heads, ablation, gen, dev)

    mean, zero = {"kind": "mean", "values": "v"}, {"kind": "zero", "values": "none"}
    assert key([], mean) == key([], zero)  # no head masked: the unmasked model generates
    assert key([(0, 1)], mean) != key([(0, 1)], zero)
    assert key([(0, 1), (1, 0)], mean) != key([(1, 0), (0, 1)], mean)  # order is part of it
    base = key([(0, 1)], mean)
    for i, changed in enumerate(({"spec": "n"}, "other", {"max_new_tokens": 5}, "cuda")):
        other = list(args)
        other[i] = changed
        fp, prompts, gen, dev = other
        assert generation_key(fp, prompts, [(0, 1)], mean, gen, dev) != base


def test_stored_values_are_read_back_and_damaged_or_linked_ones_ignored(store, tmp_path):
    import torch

    values = {0: torch.arange(6.0).reshape(2, 3), 2: torch.ones(2, 3)}
    store.put_values(KEY, values)
    back = store.get_values(KEY)
    assert back.keys() == values.keys() and all(torch.equal(back[k], values[k]) for k in values)
    tensors = store.path(KEY, store.values_dir, ".pt")
    raw = tensors.read_bytes()
    tensors.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))  # one bit flipped
    with pytest.warns(StoreWarning, match="not the file its entry describes"):
        assert store.get_values(KEY) is None
    elsewhere = tmp_path / "elsewhere.pt"
    elsewhere.write_bytes(raw)
    tensors.unlink()
    os.symlink(elsewhere, tensors)
    with pytest.warns(StoreWarning, match="symbolic link"):
        assert store.get_values(KEY) is None
    assert store.get_values(OTHER) is None  # absent: no warning
