"""``attribute`` shows how far it is (a bar with a total, the known heads' own bar) and can skip
the known-heads step; the successor score computes only the logits it compares."""

from __future__ import annotations

import json

import torch

from interp_heads.analysis import known_heads as kh
from interp_heads.config.run_config import RunConfig
from tests.helpers import DATA, cli

TASK = str(DATA / "tiny_echo.jsonl")
ARGV = ["attribute", "--model", "tiny", "--task", TASK, "--no-filter", "--n-examples", "6"]


def test_attribute_bar_has_a_total_and_names_each_step(tmp_path, capsys):
    assert cli(*ARGV, "--out", tmp_path / "a") == 0
    err = capsys.readouterr().err.replace("\r", "\n")
    for step in ("examples", "attribution", "known heads", "attention patterns", "report"):
        assert f"{step}:" in err, err[-2000:]
    assert "5/5 [" in err and "forward passes" in err  # total: the command's five steps
    assert f"/{1 + 3} [" in err  # the known heads' bar: 1 forward pass + 3 layers (tiny model)


def test_known_heads_can_be_skipped(tmp_path, capsys):
    out = tmp_path / "a"
    assert cli(*ARGV, "--out", out, "--no-known-heads", "--quiet") == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["known_heads"] == {"skipped": "off (known_heads = false)"}
    assert not (out / "known_heads.csv").exists()
    assert "Known head kinds" not in (out / "index.html").read_text()
    # the same folder with known heads on, then off again: the page drops the earlier table
    assert cli(*ARGV, "--out", out, "--quiet") == 0
    assert (out / "known_heads.csv").exists()
    assert "Known head kinds" in (out / "index.html").read_text()
    assert cli(*ARGV, "--out", out, "--no-known-heads", "--quiet") == 0
    assert "Known head kinds" not in (out / "index.html").read_text()
    # a setting of the page, not of the results: the digest (and resuming) is unchanged
    assert RunConfig(known_heads=False).digest() == RunConfig().digest()
    assert RunConfig.from_dict({"attribution": {"known_heads": False}}).known_heads is False


def test_known_head_progress_counts_every_layer(tiny):
    done = []
    kh.known_head_scores(tiny, 2, 6, 0, progress=done.append)
    assert sum(done) == 1 + tiny.cfg.n_layers


def test_successor_logits_are_the_unembedding_columns(tiny):
    x = torch.randn(4, 5, tiny.cfg.d_model)
    ids = [7, 3, 100, 42]
    torch.testing.assert_close(kh._unembed_columns(tiny, x, ids), tiny.unembed(x)[..., ids])
