"""Null calibration of the TopK-vs-RandomK verdict rules: how often each says "TopK collapses the
task" when no head is specific to it (false-positive rate), and how often it says so when TopK
truly drops the task by a known amount (power), at the pages' n (19-24 and 48-60 examples) and
draws (5).

The rules (:data:`RULES`), each on one cell ``top[example]``, ``control[draw, example]`` (scores
0 or 1, unmasked score 1: the pages evaluate correctly answered examples):

- ``ratio_3x`` (the seed claim as the pages applied it, ``studies.compare.tables.collapses`` before
  ``sweep.verdict``): TopK's drop at least 3x RandomK's, and ``sweep.stats.paired_bootstrap``
  significant below 0 (its percentile interval below 0 and the raw sign-flip p < 0.05);
- ``sweep_raw`` (the sweep's test alone): ``paired_bootstrap`` significant below 0, raw p;
- ``holm_exact`` (``sweep.verdict``'s rule): ``sweep.exact.paired_test``'s p (examples and draws
  random factors), Holm-adjusted over a page's family of :data:`FAMILY` cells, below 0.05 and
  TopK below RandomK. The family is simulated whole; a replicate's false positive is counted per
  cell (the pages' cells are read one at a time).

Null kinds (``kind``), each a replicate = one cell:

- ``randomk_vs_randomk``: one random draw relabelled as TopK against the other draws, on records
  simulated from a heavy-tailed draw population (:func:`draw_levels`: a draw that holds a
  critical head falls to about 0.2, as two of five did on SmolLM2, ``docs/results_notes.md``);
- ``random_weights``: every head set alike (no head specific to the task; the draws differ only
  by example noise): what a model with no task-specific head gives;
- ``tiny_model``: the same relabelling on a real (random-weight) tiny HookedTransformer per
  family, masked generation of one token, heads zero-ablated, score = the unmasked model's
  token kept (built here, seeded), so the heads' real heterogeneity enters;
- ``label_permuted``: on the same kind of model, TopK ranked by single-head ablation on a task
  whose labels are permuted (:func:`tiny_family` with ``permuted``), so its ranking carries no
  task information. Where such a ranking still picks heads that move every output, the rule's
  "yes" is partly true (those heads matter for the score), so this rate bounds the false
  positives from above.

Power (``kind = "power"``): TopK's per-example drop planted at known sizes (``effect``: the
probability that TopK loses an example RandomK's population keeps), on the same heavy-tailed draw
population; ``power_light``: the same on draws without the tail (every draw about 0.7). Under the
heavy tail a TopK at 0 is not far outside what random draws reach, so no rule that holds its
false-positive rate against a relabelled draw can have much power there. Model-based planting (``testing.planted``) is not used: simulated records with known
per-example drop probabilities.

Every false-positive rate carries its exact Clopper-Pearson 95% interval.
"""

from __future__ import annotations

import numpy as np

from interp_heads.sweep.exact import clopper_pearson, paired_test
from interp_heads.sweep.inference import holm
from interp_heads.sweep.stats import paired_bootstrap

RULES = ("ratio_3x", "sweep_raw", "holm_exact")
FAMILY = 8  # a page's cells: 4 tasks x 2 k (docs/compare.md per protocol)
ALPHA = 0.05
CRITICAL = 0.3  # the share of random draws that hold a critical head
POWER_KINDS = ("power", "power_light")  # planted on heavy-tailed draws / on draws without a tail
EFFECTS = (0.3, 0.5, 0.7, 1.0)  # planted per-example drop probabilities of TopK (1: TopK 0)


def draw_levels(rng: np.random.Generator, size, heavy: bool = True) -> np.ndarray:
    """Each draw's accuracy: about 0.7 (0.55-0.85); with probability :data:`CRITICAL` (when
    ``heavy``) the draw holds a critical head and falls to 0.1-0.3."""
    level = rng.uniform(0.55, 0.85, size)
    if heavy:
        level = np.where(rng.random(size) < CRITICAL, rng.uniform(0.1, 0.3, size), level)
    return level


def _scores(rng, levels: np.ndarray, easy: np.ndarray) -> np.ndarray:
    """0/1 scores of sets at ``levels`` on examples of logit ease ``easy`` (per-example)."""
    logit = np.log(levels / (1 - levels))[:, None] + easy[None, :]
    return (rng.random(logit.shape) < 1 / (1 + np.exp(-logit))).astype(float)


def simulate(rng, n: int, draws: int, kind: str, effect: float = 0.0) -> tuple:
    """One cell's ``(top, control)``: ``draws + 1`` sets of the kind's population, the first
    relabelled as TopK; under power, TopK loses each example it would keep with ``effect``."""
    easy = rng.normal(0.0, 1.0, n)
    heavy = kind not in ("random_weights", "power_light")
    if kind == "random_weights":
        levels = np.full(draws + 1, rng.uniform(0.55, 0.85))
    else:
        levels = draw_levels(rng, draws + 1, heavy)
    sets = _scores(rng, levels, easy)
    top = sets[0]
    if kind in POWER_KINDS:
        top = top * (rng.random(n) >= effect)
    return top, sets[1:]


def rule_calls(top: np.ndarray, control: np.ndarray) -> dict:
    """Per rule: its raw decision pieces (the Holm rule's p is adjusted over the family later)."""
    boot = paired_bootstrap(top, control, n_boot=500)
    top_drop, control_drop = 1 - top.mean(), 1 - control.mean()
    ratio = control_drop <= 0 < top_drop or (control_drop > 0 and top_drop / control_drop >= 3)
    below = boot["significant"] and boot["diff_high"] < 0
    exact = paired_test(top, control, interval=False)
    return {"ratio_3x": bool(ratio and below), "sweep_raw": bool(below),
            "p": exact["p_value"], "diff": exact["diff"]}  # fmt: skip


def family_calls(cells: list[tuple]) -> list[dict]:
    """:func:`rule_calls` for a page's family of cells, the Holm rule decided over it."""
    calls = [rule_calls(t, c) for t, c in cells]
    adj = holm([c["p"] for c in calls])
    for c, a in zip(calls, adj, strict=True):
        c["holm_exact"] = bool(a < ALPHA and c["diff"] < 0)
    return calls


def run_kind(kind: str, n: int, draws: int, replicates: int, seed: int, effect=0.0) -> dict:
    """``{rule: positives}`` over ``replicates`` cells of ``kind`` (families of :data:`FAMILY`)."""
    rng = np.random.default_rng(seed)
    hits = dict.fromkeys(RULES, 0)
    done = 0
    while done < replicates:
        calls = family_calls([simulate(rng, n, draws, kind, effect) for _ in range(FAMILY)])
        for c in calls[: replicates - done]:
            for r in RULES:
                hits[r] += int(c[r])
        done += min(FAMILY, replicates - done)
    return hits


def rows_for(kind: str, n: int, draws: int, replicates: int, seed: int, effect=0.0) -> list:
    """Table rows: rule, kind, n, draws, replicates, positives, rate with its exact interval."""
    hits = run_kind(kind, n, draws, replicates, seed, effect)
    return [rate_row(r, kind, n, draws, replicates, hits[r], effect) for r in RULES]


def rate_row(rule, kind, n, draws, replicates, positives, effect=0.0, power=None) -> dict:
    """One table row: the rule's positives over ``replicates`` cells as a rate with its exact
    interval, read as a power (with ``effect``) when ``power`` (default: ``kind`` is one of
    :data:`POWER_KINDS`), else as a false-positive rate."""
    lo, hi = clopper_pearson(positives, replicates)
    rate = positives / replicates
    row = {"rule": rule, "kind": kind, "n": n, "draws": draws, "replicates": replicates,
           "positives": positives}  # fmt: skip
    if kind in POWER_KINDS if power is None else power:
        return row | {"effect": effect, "power": rate, "power_low": lo, "power_high": hi}
    return row | {"fpr": rate, "fpr_low": lo, "fpr_high": hi}


def tiny_family(
    seed: int, n: int, draws: int, k: int = 2, gain: float = 2.0, permuted: bool = False
) -> list:
    """A family of :data:`FAMILY` ``tiny_model`` cells on one random-weight attention-only
    HookedTransformer (2 layers x 4 heads, seed ``seed``; ``W_O`` scaled by ``gain`` so that a
    head moves the output): per cell ``n`` random prompts and ``draws + 1`` random sets of ``k``
    heads zero-ablated at ``hook_z``; score 1 when the masked model's next token is the unmasked
    one's. The first set of each cell plays TopK; with ``permuted`` TopK is instead the ``k``
    heads whose single ablation lowers most the log-probability of permuted labels (each of ``n``
    further prompts labelled with another prompt's unmasked token): a ranking made on a task whose
    labels carry nothing, the label-permuted null."""
    import torch
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    cfg = HookedTransformerConfig(
        n_layers=2, d_model=32, n_heads=4, d_head=8, n_ctx=12, d_vocab=40,
        attn_only=True, seed=seed, device="cpu",
    )  # fmt: skip
    model = HookedTransformer(cfg).eval()
    with torch.no_grad():
        for block in model.blocks:
            block.attn.W_O.mul_(gain)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    heads = [(layer, h) for layer in range(cfg.n_layers) for h in range(cfg.n_heads)]
    cells = []
    with torch.no_grad():
        for _ in range(FAMILY):
            prompts = torch.randint(0, cfg.d_vocab, (n, 8), generator=gen)
            base = model(prompts)[:, -1].argmax(-1)
            scores = []
            sets_of = [
                [heads[i] for i in rng.choice(len(heads), size=k, replace=False)]
                for _ in range(draws + 1)
            ]
            if permuted:
                sets_of[0] = _permuted_topk(model, heads, k, n, gen, cfg.d_vocab)
            for chosen in sets_of:
                hooks = [(f"blocks.{layer}.attn.hook_z", _zero(h)) for layer, h in chosen]
                out = model.run_with_hooks(prompts, fwd_hooks=hooks)[:, -1].argmax(-1)
                scores.append((out == base).float().numpy())
            sets = np.stack(scores)
            cells.append((sets[0], sets[1:]))
    return cells


def _permuted_topk(model, heads, k, n, gen, vocab) -> list:
    """The ``k`` heads ranked first by the mean drop of log p(permuted label) when ablated."""
    import torch

    prompts = torch.randint(0, vocab, (n, 8), generator=gen)
    logits = model(prompts)[:, -1]
    labels = logits.argmax(-1)[torch.randperm(n, generator=gen)]
    base = logits.log_softmax(-1)[torch.arange(n), labels]
    drops = []
    for layer, h in heads:
        out = model.run_with_hooks(prompts, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", _zero(h))])
        drops.append(float((base - out[:, -1].log_softmax(-1)[torch.arange(n), labels]).mean()))
    return [heads[i] for i in np.argsort(drops)[::-1][:k]]


def _zero(head: int):
    def hook(z, hook):  # noqa: ARG001 (TransformerLens passes the hook point)
        z[:, :, head] = 0.0
        return z

    return hook


def run_tiny(n: int, draws: int, replicates: int, seed: int, permuted: bool = False) -> list:
    """:func:`rows_for` on ``tiny_model`` cells (``label_permuted`` with ``permuted``): one
    random-weight model per family."""
    hits = dict.fromkeys(RULES, 0)
    for start in range(0, replicates, FAMILY):
        size = min(FAMILY, replicates - start)
        cells = tiny_family(seed + start, n, draws, permuted=permuted)
        for c in family_calls(cells)[:size]:
            for r in RULES:
                hits[r] += int(c[r])
    kind = "label_permuted" if permuted else "tiny_model"
    return [rate_row(r, kind, n, draws, replicates, hits[r]) for r in RULES]
