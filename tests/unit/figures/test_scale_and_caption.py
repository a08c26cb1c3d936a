"""The heatmap's colour scale survives one dominant head; the curves' caption names only the
traces drawn; the unmasked line is plain and visible."""

from __future__ import annotations

import pandas as pd
import torch

from interp_heads.attribution import HeadScores
from interp_heads.figures.curves import caption, plot_sweep
from interp_heads.figures.heatmaps import head_heatmap


def _percentile(values, q):
    """Linear-interpolation percentile, written here (numpy's default) as the reference."""
    import numpy as np

    return float(np.percentile(np.abs(np.asarray(values)), q))


def test_one_dominant_head_does_not_whiten_the_rest():
    gen = torch.Generator().manual_seed(0)
    s = torch.randn(30, 9, generator=gen) * 0.01
    s[0, 8] = 0.26  # SmolLM2's L0H8: 26x the others
    heat = head_heatmap(HeadScores(s, "atp", "t")).data[0]
    want = _percentile(s.flatten().tolist(), 99)
    assert abs(heat.zmax - want) < 1e-9 and heat.zmin == -heat.zmax and heat.zmid == 0
    assert "clipped" in heat.colorbar.title.text and "99th" in heat.colorbar.title.text
    # most cells get a visible colour: the median |score| is a fair share of the scale
    assert float(s.abs().median()) / heat.zmax > 0.1  # unclipped: 0.0067 / 0.26 = 0.03
    assert abs(heat.z[0][8] - 0.26) < 1e-6  # the hover keeps the true score


def test_no_dominant_head_no_clipping_and_signed_scale_is_symmetric():
    s = torch.tensor([[0.5, -1.0, 0.25], [0.75, -0.5, 0.1]])
    heat = head_heatmap(HeadScores(s, "atp", "t")).data[0]
    assert heat.zmax == 1.0 and heat.zmin == -1.0 and heat.zmid == 0
    assert heat.colorbar.title.text == "score"


def _summary(selections):
    rows = [dict(task="t", selection="baseline", k=0, metric="accuracy", label="Accuracy",
                 mean=0.9, ci_low=0.9, ci_high=0.9, n_draws=1, n_examples=4)]  # fmt: skip
    rows += [dict(task="t", selection=sel, k=k, metric="accuracy", label="Accuracy", mean=0.5,
                  ci_low=0.4, ci_high=0.6, n_draws=1, n_examples=4)
             for sel in selections for k in (2, 4)]  # fmt: skip
    return pd.DataFrame(rows)


def test_caption_names_only_the_selections_drawn():
    fig = plot_sweep(_summary(["TopK", "RandomK"]))
    text = caption(fig)
    assert text.startswith("Solid: TopK; dashed: RandomK.")
    assert "dash-dotted" not in text and "xclusive" not in text and "dotted" not in text
    assert "Grey line: the unmasked model." in text and "Bands: 95% CI" in text
    more = caption(plot_sweep(_summary(["TopK", "RandomK", "ExclusiveTopK"]), bands=False))
    assert "dash-dotted: " in more and "Bands" not in more
    assert "Unmasked" not in caption(plot_sweep(_summary(["TopK"]).iloc[1:]))  # no baseline row


def test_unmasked_line_is_plain_and_visible():
    fig = plot_sweep(_summary(["TopK", "RandomK"]))
    line = next(t for t in fig.data if t.name.startswith("Unmasked")).line
    assert line.dash == "solid" and line.width >= 1.5
    assert line.color.startswith("#")  # opaque, not a faint rgba
