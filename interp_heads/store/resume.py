"""Resume keys: one digest per stored unit over everything its result depends on.

A stored unit (a sweep condition, an attribution file, a baseline cache entry) is reused only when
its ``resume_key`` equals the key of the unit about to be computed, so a result can never be
reused under different inputs; ``--force`` then only means "overwrite what differs". The keys
cover:

- the model: its source spec and file hash (``model_info.source_of``), else a sha256 of its
  weights, plus dtype and shape (:func:`model_fingerprint`);
- the task rows: every field of every example and the exact rendered prompt (:func:`rows_digest`);
- for a condition: the heads masked (in order), the ablation kind and a digest of its replacement
  values, the mask's positions and scale factor (when not the defaults), the generation
  settings, and each metric's name, label, class and version;
- for attribution: method, refinement and every other setting passed to ``attribute_heads``;
- for the baseline: generation settings;
- for a shared store's generations (:func:`generation_key`): the model, the prompts' tokens, the
  mask, the generation settings and the device type, and nothing read after generating.

The device is not part of the resume keys: a run started on one device may be resumed on another.
A shared store's key holds the device type: it is reused by other runs, not only resumed.
"""

from __future__ import annotations

import hashlib
import weakref

import torch

from interp_heads.model_info import source_of
from interp_heads.store import digest

KEY_VERSION = 1


def tensor_digest(values) -> str:
    """sha256 of tensors nested in dicts/lists (ablation values); ``"none"`` for None."""
    if values is None:
        return "none"
    h = hashlib.sha256()

    def feed(v):
        if isinstance(v, torch.Tensor):
            t = v.detach().cpu().contiguous().reshape(-1)
            h.update(f"{t.dtype}{tuple(v.shape)}".encode())
            h.update(t.view(torch.uint8).numpy().tobytes())
        elif isinstance(v, dict):
            for k in sorted(v, key=str):
                h.update(repr(k).encode())
                feed(v[k])
        elif isinstance(v, list | tuple):
            h.update(f"[{len(v)}".encode())
            for x in v:
                feed(x)
        else:
            h.update(repr(v).encode())

    feed(values)
    return h.hexdigest()[:32]


_FINGERPRINTS: weakref.WeakKeyDictionary = (
    weakref.WeakKeyDictionary()
)  # model -> (version stamp, hash)


def model_fingerprint(model) -> dict:
    """Model identity: source spec and file hash, else a weights hash; plus dtype and shape.

    The weights hash is cached per model object and recomputed when any parameter changes
    in place (torch's per-tensor version counters).
    """
    src = source_of(model)
    cfg = model.cfg
    fp = {
        "spec": src.get("spec"),
        "sha256": src.get("sha256"),
        "dtype": str(cfg.dtype),
        "shape": [cfg.n_layers, cfg.n_heads, cfg.d_head, cfg.d_model, cfg.d_vocab],
    }
    if src.get("backend", "hooked") != "hooked":  # other backends' numbers differ slightly
        fp["backend"] = src["backend"]
    if src.get("sha256"):
        return fp
    stamp = tuple(p._version for p in model.parameters())  # bumped by every in-place change
    cached = _FINGERPRINTS.get(model)  # keyed by the object itself: a recycled id() cannot match
    if cached is None or cached[0] != stamp:
        cached = (stamp, {"weights_sha256": tensor_digest(dict(model.state_dict()))})
        _FINGERPRINTS[model] = cached
    return {**fp, **cached[1]}


def rows_digest(examples, prompts: list[str] | None = None) -> str:
    """Digest of the task rows (every field) and, when given, the rendered prompts."""
    rows = [e.to_dict() if hasattr(e, "to_dict") else e for e in examples]
    return digest({"rows": rows, "prompts": prompts}, 32)


def metric_identity(metric) -> dict:
    """What identifies a metric's scores: class, name, label, version and checkpoint."""
    return {
        "class": f"{type(metric).__module__}.{type(metric).__qualname__}",
        "name": metric.name,
        "label": metric.label,
        "version": getattr(metric, "version", 1),
        "model": str(getattr(metric, "model", None) or getattr(metric, "path", None) or ""),
    }


def unit_key(unit: str, model_fp: dict, rows: str, **inputs) -> str:
    """Resume key of one unit of work: its kind, the model, its rows and whatever else it reads."""
    return digest({"v": KEY_VERSION, "unit": unit, "model": model_fp, "rows": rows, **inputs}, 32)


def condition_key(
    model_fp: dict,
    rows: str,
    heads,
    kind: str,
    values_digest: str,
    generation: dict,
    metrics,
    mask: dict | None = None,
) -> str:
    """Resume key of one sweep condition (see the module docstring).

    ``mask``: the mask's scope and scale factor when they are not the defaults (``SweepConfig
    .mask_key``); at the defaults the key leaves them out.
    """
    return unit_key(
        "condition",
        model_fp,
        rows,
        heads=[list(h) if not isinstance(h, str) else h for h in heads],
        ablation={"kind": kind, "values": values_digest, **(mask or {})},
        generation=generation,
        metrics=[metric_identity(m) for m in metrics],
    )


def generation_key(
    model_fp: dict,
    prompts: str,
    heads,
    ablation: dict | None,
    generation: dict,
    device: str,
) -> str:
    """Key of one condition's generations in a shared store (``store.shared``): everything that
    determines its tokens, nothing that is read after them (metrics, references, example ids).

    ``model_fp``: :func:`model_fingerprint` (weights or source file, dtype, shape, backend);
    ``prompts``: a digest of the rendered prompts, their token ids and the tokenizer's pad and
    end ids, in order (the batches depend on the order); ``heads``: the heads masked, in order;
    ``ablation``: the kind, a digest of its replacement values, the scope (positions) and the
    kind's options (None when no head is masked: the unmasked model generates, whatever the
    mask settings); ``generation``: greedy decoding, ``max_new_tokens``, the stops and the batch
    size (``Generation.key``); ``device``: the device type (kernels differ between devices).
    """
    heads = [list(h) if not isinstance(h, str) else h for h in heads]
    return digest(
        {
            "v": KEY_VERSION,
            "unit": "generations",
            "model": model_fp,
            "prompts": prompts,
            "heads": heads,
            "ablation": ablation if heads else None,
            "generation": generation,
            "device": device,
        },
        32,
    )


def values_key(
    model_fp: dict,
    prompts: str,
    kind: dict,
    batch_size: int,
    device: str,
    batch_padding: int | None = None,
) -> str:
    """Key of an ablation kind's replacement values in a shared store: the model, the prompts
    (digest as in :func:`generation_key`), the kind with its options, the batches of the
    forward passes that average them (``batch_padding`` only when set) and the device type."""
    fields = {
        "v": KEY_VERSION,
        "unit": "values",
        "model": model_fp,
        "prompts": prompts,
        "kind": kind,
        "batch_size": batch_size,
        "device": device,
    }
    if batch_padding is not None:
        fields["batch_padding"] = batch_padding
    return digest(fields, 32)


def attribution_key(model_fp: dict, rows: str, **settings) -> str:
    """Resume key of one attribution file: model, rank rows and every ``attribute_heads`` setting."""
    return unit_key("attribution", model_fp, rows, settings=settings)


def baseline_key(model_fp: dict, rows: str, **settings) -> str:
    """Resume key of one baseline cache entry: model, rows (rendered) and generation settings."""
    return unit_key("baseline", model_fp, rows, settings=settings)
