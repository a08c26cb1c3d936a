"""What a sweep checks about itself: warnings (``SweepWarning``), never errors.

A random draw equal to the TopK set, a mask that changes no logits (hooks not firing), mostly
empty generations under a condition, a baseline too low for the curve to say anything.
"""

from __future__ import annotations

import warnings

import torch

from interp_heads.choices import BASELINE
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.selections import AllButTopK, TopK, by_display


class SweepWarning(UserWarning):
    """Something in the sweep looks wrong (mask without effect, empty answers, low baseline...)."""


class VerdictWarning(SweepWarning):
    """The sweep cannot give a TopK vs random verdict: too few examples or random draws."""


def check_verdict_counts(
    selections, n_draws: int, n_examples: dict[str, int], fix: str = "raise seeds or add examples"
) -> bool:
    """Warn before any generation when a task's examples (``{task: n}``) or the random draws per
    k are too few for a verdict (``stats.MIN_EXAMPLES``, ``stats.MIN_DRAWS``); True if it warned.
    Nothing to warn about without a masked random selection (RandomK and the like). ``fix``: what to change, in the
    caller's words (the command line names its flags)."""
    from interp_heads.interventions.selections import SELECTIONS
    from interp_heads.sweep.stats import shortfall

    if not any(SELECTIONS.get(n).random and not SELECTIONS.get(n).kept for n in selections):
        return False  # no masked random control (a kept-set sweep has its own measures)
    warned = False
    for name, n in n_examples.items():
        short = shortfall(n, n_draws)
        if short:
            warnings.warn(
                f"{name}: {short}: no TopK vs random verdict can come from this run (every one "
                f"will read 'too few ... to decide', without a p-value); {fix}",
                VerdictWarning,
                stacklevel=3,
            )
            warned = True
    return warned


def check_plan(plan, task: str) -> None:
    """Warn when a random draw equals the ranking's own set of the same k (TopK for masked-set
    controls, AllButTopK for kept-set ones; whether a selection is random or kept is read from
    its class)."""
    tops = {TopK.display: False, AllButTopK.display: True}
    top = {(kept, k): set(h) for name, k, _, h in plan if (kept := tops.get(name)) is not None}
    for name, k, seed, heads in plan:
        cls = by_display(name)
        if cls is None or not cls.random or cls.kept and (k == 0 or not heads):
            continue  # keeping no head or every head is the same set for every draw
        if top.get((cls.kept, k)) == set(heads):
            warnings.warn(
                f"{task}: {name} seed {seed} at k={k} drew exactly the "
                f"{'AllButTopK' if cls.kept else 'TopK'} set",
                SweepWarning,
                stacklevel=3,
            )


def _mask_has_effect(model, prompts, heads, kind, values, positions="all") -> bool:
    """Whether masking ``heads`` changes the next-token logits of the task's shortest prompt:
    the check is that the hooks fire, which one prompt shows, and the shortest costs least."""
    from interp_heads.generation.decode import tokenize_left_padded

    tokens, mask = tokenize_left_padded(model, [min(prompts, key=len)])
    tokens, mask = tokens.to(model.cfg.device), mask.to(model.cfg.device)
    with torch.inference_mode():
        base = _next_logits(model, tokens, mask, positions)
        with mask_heads(model, heads, kind, values=values, positions=positions):
            masked = _next_logits(model, tokens, mask, positions)
    return not torch.allclose(base, masked)


def _next_logits(model, tokens, mask, positions):
    """The prompt's last logits (unembedded there only); for the ``generated`` scope, which
    leaves the prompt's pass alone, those of the next (KV-cached) pass, the first that scope
    masks."""
    from interp_heads.generation.logits import last_logits

    if positions != "generated":
        return last_logits(model, tokens, mask)
    from interp_heads.generation.kv_cache import KVCache

    cache = KVCache(model, tokens.shape[0])
    nxt = cache.step(tokens, mask, mask).argmax(-1, keepdim=True)
    one = torch.ones_like(nxt)
    return cache.step(nxt, one, torch.cat([mask, one], dim=1))


def check_mask_effect(model, name, prompts, plan, kind, values, positions="all") -> None:
    """Warn when the task's biggest mask changes no logits (hooks not firing); ``kind`` is the
    ablation kind object, ``positions`` the mask's scope."""
    biggest = max(plan, key=lambda c: len(c[3]))
    if biggest[3] and not _mask_has_effect(model, prompts, biggest[3], kind, values, positions):
        warnings.warn(
            f"{name}: masking {len(biggest[3])} heads changed no logits; hooks may not fire",
            SweepWarning,
            stacklevel=3,
        )


def check_results(result) -> None:
    gens = result.generations
    if len(gens):
        empty = (
            (gens["generation"].str.strip() == "")
            .groupby([gens["task"], gens["selection"], gens["k"]])
            .mean()
        )
        for (task, sel, k), frac in empty.items():
            if frac > 0.5:
                warnings.warn(
                    f"{task}: {frac:.0%} empty generations under {sel} k={k}",
                    SweepWarning,
                    stacklevel=3,
                )
    rec = result.records
    if len(rec):
        base = (
            rec[(rec.selection == BASELINE) & (rec.metric == "accuracy")]
            .groupby("task")["value"]
            .mean()
        )
        for task, acc in base.items():
            if acc < 0.2:
                warnings.warn(
                    f"{task}: baseline accuracy {acc:.2f} < 0.2; the curve will say little",
                    SweepWarning,
                    stacklevel=3,
                )
