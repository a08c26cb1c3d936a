"""Exact per-head patching, many heads per forward pass: ``exact`` and ``mean_ablation``.

For a head in layer ``l``, nothing below ``l`` changes, so the base run's residual stream at
``blocks.{l}.hook_resid_pre`` is cached once and each layer's heads are patched together, one head
per slice of a batch ``n_heads x batch``, running only blocks ``l..L-1``. Positions before the
first one where the source and base runs differ are identical in both runs, and stay identical in
every later layer, so they are not recomputed either: their keys and values are handed to
TransformerLens as a frozen KV cache (on a backend that takes one, ``Backend.frozen_prefix``;
``Backend.prefix_cache`` builds it). Only the last position is unembedded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from jaxtyping import Float, Int

from interp_heads.attribution.inputs import (
    Batch,
    answer_logprob,
    final_logits,
    logit_diff,
)
from interp_heads.heads import Head, all_heads, heads_by_layer, hook_z
from interp_heads.models.backends import backend_of
from interp_heads.models.tl_compat import HookedTransformer

# metric(logits [n_patches, batch, d_vocab]) -> [n_patches, batch]
PatchMetric = Callable[[torch.Tensor], torch.Tensor]


@torch.no_grad()
def patch_heads(
    model: HookedTransformer,
    base_tokens: Int[torch.Tensor, "batch pos"],
    source_z: Callable[[int], Float[torch.Tensor, "batch pos head_index d_head"]],
    metric: PatchMetric,
    *,
    attention_mask: Int[torch.Tensor, "batch pos"] | None = None,
    heads: Sequence[Head] | None = None,
    start_pos: int = 0,
    max_rows: int = 128,
    base_cache: dict[str, torch.Tensor] | None = None,
) -> Float[torch.Tensor, "layer head batch"]:
    """Metric of the base run with one head's ``hook_z`` replaced by ``source_z(layer)``, per head.

    Args:
        model: the model.
        base_tokens: tokens of the run that is patched (e.g. the corrupted prompts).
        source_z: layer -> the values patched in (e.g. the clean run's ``hook_z``).
        metric: logits ``[n, batch, d_vocab]`` at the last position -> ``[n, batch]``.
        attention_mask: padding mask of ``base_tokens`` (``None``: no padding).
        heads: heads to patch (default all); unpatched entries of the result are NaN.
        start_pos: first position where source and base may differ; earlier positions are taken
            from the base run's KV cache, not recomputed (they would be identical).
        max_rows: at most this many rows (heads x batch) per forward pass.
        base_cache: the base run's activations named by :func:`base_names`, if already computed.
    """
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    if not backend_of(model).frozen_prefix:  # no frozen prefix cache: recompute the prefix
        start_pos = 0
    batch = base_tokens.shape[0]
    out = torch.full((n_layers, n_heads, batch), float("nan"))
    by_layer = heads_by_layer(heads if heads is not None else all_heads(n_layers, n_heads))
    if not by_layer:
        return out
    if base_cache is None:
        base_cache, _ = run_cached(
            model, base_tokens, attention_mask, base_names(model, by_layer, start_pos)
        )
    cache = base_cache
    per_pass = max(1, max_rows // batch)
    for layer in sorted(by_layer):
        src = source_z(layer)[:, start_pos:]
        resid = cache[f"blocks.{layer}.hook_resid_pre"][:, start_pos:]
        for c in range(0, len(by_layer[layer]), per_pass):
            hs = by_layer[layer][c : c + per_pass]
            vals = _run_patched(
                model, layer, hs, src, resid, cache, attention_mask, start_pos, metric
            )
            out[layer, hs] = vals.float().cpu()
    return out


def base_names(model: HookedTransformer, layers, start_pos: int) -> set[str]:
    """Activations of the base run that :func:`patch_heads` needs."""
    names = {f"blocks.{layer}.hook_resid_pre" for layer in layers}
    if start_pos > 0 and layers:
        names |= {
            f"blocks.{i}.attn.hook_{kv}"
            for i in range(min(layers), model.cfg.n_layers)
            for kv in "kv"
        }
    return names


@torch.no_grad()
def run_cached(
    model: HookedTransformer,
    tokens: Int[torch.Tensor, "batch pos"],
    attention_mask: Int[torch.Tensor, "batch pos"] | None,
    names: set[str],
) -> tuple[dict[str, torch.Tensor], Float[torch.Tensor, "batch d_vocab"]]:
    """One forward pass: the named activations and the logits at the last position only."""
    cache: dict[str, torch.Tensor] = {}

    def keep(x, name):
        cache[name] = x.detach()

    hooks = backend_of(model).caching_hooks(names, keep)  # stored under the names asked for
    with model.hooks(fwd_hooks=hooks):
        resid = model(tokens, attention_mask=attention_mask, stop_at_layer=model.cfg.n_layers)
    return cache, final_logits(model, resid)


def _run_patched(model, layer, hs, src, resid, cache, attention_mask, start_pos, metric):
    n, batch = len(hs), resid.shape[0]
    kv = None
    if start_pos > 0:  # the base run's keys and values of the shared prefix, frozen
        kv = backend_of(model).prefix_cache(model, layer, cache, start_pos, n)
    final = patched_resid(model, layer, hs, src, resid, attention_mask, kv=kv)
    logits = final_logits(model, final)
    return metric(logits.view(n, batch, -1))


def patched_resid(model, layer, hs, src, resid, attention_mask, *, stop=None, kv=None):
    """Blocks ``layer..stop-1`` (default: to the last) run on ``resid`` (that layer's
    ``hook_resid_pre``) once per head of ``hs``, stacked ``[len(hs) x batch, pos, d_model]``, with
    that head's ``hook_z`` replaced by ``src[..., head, :]``; returns the residual stream there."""
    n, batch = len(hs), resid.shape[0]

    def hook(z, hook):
        z = z.clone()
        for j, h in enumerate(hs):
            z[j * batch : (j + 1) * batch, :, h] = src[:, :, h]
        return z

    mask = attention_mask.repeat(n, 1) if attention_mask is not None else None
    extra = backend_of(model).resid_input_kwargs(mask)  # e.g. positions from the mask
    with model.hooks(fwd_hooks=[(hook_z(layer), hook)]):
        return model(
            resid.repeat(n, 1, 1),
            start_at_layer=layer,
            stop_at_layer=model.cfg.n_layers if stop is None else stop,
            attention_mask=mask,
            past_kv_cache=kv,
            **extra,
        )


@torch.no_grad()
def exact_scores(
    model: HookedTransformer,
    batches: Sequence[Batch],
    *,
    heads: Sequence[Head] | None = None,
    max_rows: int = 128,
    skip_prefix: bool = True,
    per_example: list | None = None,
) -> Float[torch.Tensor, "layer head"]:
    """Activation patching of each head's ``hook_z`` (clean -> corrupted run, all positions).

    Score = (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted), LD = mean over all examples of
    the logit difference answer - corrupted answer (first tokens) at the last position: 1 means the
    head alone restores the clean behaviour, 0 means no effect. Same metric as TransformerLens'
    ``get_act_patch_attn_head_out_all_pos`` with a normalised logit-difference metric.
    ``skip_prefix=False`` recomputes the positions before the first clean/corrupted difference too
    (same result, slower; for benchmarks). ``per_example``: a list that receives each example's
    score ``[example layer head]`` on the same scale (their mean is the score).
    """
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    total = torch.zeros(n_layers, n_heads)
    ld_clean = ld_corr = 0.0
    n, rows = 0, []
    layers = sorted({layer for layer, _ in heads}) if heads is not None else list(range(n_layers))
    for b in batches:
        start = b.first_diff if skip_prefix else 0
        z, clean_logits = run_cached(model, b.clean, b.mask, {hook_z(layer) for layer in layers})
        base, corr_logits = run_cached(model, b.corrupted, b.mask, base_names(model, layers, start))
        ld_clean += float(logit_diff(clean_logits, b).sum())
        ld_corr += float(logit_diff(corr_logits, b).sum())
        res = patch_heads(
            model,
            b.corrupted,
            lambda layer, z=z: z[hook_z(layer)],
            lambda lg, b=b: logit_diff(lg, b),
            attention_mask=b.mask,
            heads=heads,
            start_pos=start,
            max_rows=max_rows,
            base_cache=base,
        )
        total += res.sum(-1)
        rows.append(res.permute(2, 0, 1))
        n += len(b)
    ld_clean, ld_corr = ld_clean / n, ld_corr / n
    den = logit_diff_denominator(ld_clean, ld_corr)
    if per_example is not None:
        per_example.append((torch.cat(rows) - ld_corr) / den)
    return (total / n - ld_corr) / den


def logit_diff_denominator(ld_clean: float, ld_corr: float) -> float:
    den = ld_clean - ld_corr
    if abs(den) < 1e-6:
        raise ValueError(
            "clean and corrupted logit differences are equal: the normalised metric is undefined"
        )
    return den


def z_hook_names(model) -> set[str]:
    return {hook_z(layer) for layer in range(model.cfg.n_layers)}


def masked_z_sums(model, cache: dict[str, torch.Tensor], mask) -> tuple[torch.Tensor, int]:
    stacked = torch.stack([cache[hook_z(layer)] for layer in range(model.cfg.n_layers)])
    m = mask.to(stacked.dtype)[None, :, :, None, None]
    return (stacked * m).sum(dim=(1, 2)), int(mask.sum())


@torch.no_grad()
def mean_ablation_scores(
    model: HookedTransformer,
    batches: Sequence[Batch],
    *,
    max_rows: int = 128,
    heads: Sequence[Head] | None = None,
    objective: str = "auto",
    per_example: list | None = None,
) -> tuple[Float[torch.Tensor, "layer head"], str]:
    """Drop of the objective when one head's ``hook_z`` is replaced by its task mean (all positions).

    All heads of a layer are patched in one forward pass from that layer on (``patch_heads``).
    ``objective="auto"``: with corrupted answers the normalised logit difference (drop / (LD_clean -
    LD_corrupted)), without them the mean log-probability of the answer's first token;
    ``objective="logprob"`` always the latter (the scale of ``ablation_atp``). ``heads``: score only
    these (the others are NaN). ``per_example``: as in :func:`exact_scores`.
    """
    n_layers = model.cfg.n_layers
    if objective not in ("auto", "logprob"):
        raise ValueError(f"objective must be 'auto' or 'logprob', got {objective!r}")
    use_ld = objective == "auto" and all(b.corrupted is not None for b in batches)
    metric_fn = logit_diff if use_ld else answer_logprob
    names = z_hook_names(model) | base_names(model, range(n_layers), 0)
    total, count, bases, base_caches = 0.0, 0, [], []
    for b in batches:  # one clean pass: means, base metric and the sweep's cache
        cache, logits = run_cached(model, b.clean, b.mask, names)
        s, c = masked_z_sums(model, cache, b.mask)
        total, count = total + s, count + c
        bases.append(metric_fn(logits, b).float().cpu())
        base_caches.append({k: v for k, v in cache.items() if not k.endswith("hook_z")})
    means = total / count
    scores = torch.zeros(n_layers, model.cfg.n_heads)
    corr_sum, n, rows = 0.0, 0, []
    for b, base, cache in zip(batches, bases, base_caches, strict=True):
        if use_ld:
            corr_sum += float(logit_diff(run_cached(model, b.corrupted, b.mask, set())[1], b).sum())
        shape = (*b.clean.shape, model.cfg.n_heads, model.cfg.d_head)
        res = patch_heads(
            model,
            b.clean,
            lambda layer, s=shape: means[layer].expand(s),
            lambda lg, b=b: metric_fn(lg, b),
            attention_mask=b.mask,
            heads=heads,
            max_rows=max_rows,
            base_cache=cache,
        )
        scores += (base[None, None] - res).sum(-1)
        rows.append((base[None, None] - res).permute(2, 0, 1))
        n += len(b)
    den = logit_diff_denominator(float(torch.cat(bases).mean()), corr_sum / n) if use_ld else 1.0
    if per_example is not None:
        per_example.append(torch.cat(rows) / den)
    if use_ld:
        return scores / n / den, "normalised logit diff drop"
    return scores / n, "answer log-prob drop"
