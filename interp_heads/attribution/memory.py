"""How many prompts one gradient pass over the model may hold (``attribution.api``).

A backward pass keeps what every layer computed: per prompt and layer, the attention pattern
(``n_heads x width**2`` elements, kept in fp32 by the softmax and again for its product with the
values, with a mask beside them) and the activations of each token (residual stream, attention,
MLP). On the Cognitive Mirrors study's ~370-token prompts that is 1.1 GB a prompt on SmolLM2
(measured: ``ROW_COEFFICIENTS``), so 48 of them pass 24 GB and the operating system kills the
process without a message. :func:`gradient_rows` caps a batch's prompts by the memory free
when the batches are made. A batch that fits is left as it is, so a run that fits gives the
numbers it gave before; a capped run says so (a warning and ``memory_capped_rows`` in the
scores' provenance).
"""

from __future__ import annotations

from collections.abc import Callable

from interp_heads.errors import InputError
from interp_heads.models.devices import free_bytes

# Bytes kept per attention element (head x query x key) and per token x (d_model + d_mlp), each
# per layer: fitted to the peak memory of `ablation_atp` passes on SmolLM2 on CPU, 2 to 16 prompts
# of 100 to 370 tokens (docs/performance.md, "Gradient batches and memory").
ROW_COEFFICIENTS = (23.0, 16.0)
FRACTION = 0.95  # of the free memory a gradient batch may take (the estimate is about 5% high)


def row_bytes(cfg, width: int) -> int:
    """Estimated bytes a gradient pass keeps for one prompt of ``width`` tokens."""
    attn, token = ROW_COEFFICIENTS
    d_mlp = cfg.d_mlp or 4 * cfg.d_model
    per_layer = attn * cfg.n_heads * width * width + token * width * (cfg.d_model + d_mlp)
    return int(cfg.n_layers * per_layer)


def gradient_rows(model, batch_size: int) -> Callable[[int], int] | None:
    """``rows(width)``: how many prompts of at most ``width`` tokens a gradient batch takes (at
    most ``batch_size``), or None where the free memory cannot be read.

    Raises (from ``rows``):
        InputError: one prompt alone does not fit.
    """
    free = free_bytes(model.cfg.device)
    if free is None:
        return None
    budget = int(FRACTION * free)

    def rows(width: int) -> int:
        need = row_bytes(model.cfg, width)
        if need > budget:
            raise InputError(
                f"a gradient pass over one prompt of {width} tokens needs about {need / 2**30:.1f}"
                f" GB and {free / 2**30:.1f} GB are free: shorten the prompts or rank with a "
                "method without gradients (exact, mean_ablation)"
            )
        return min(batch_size, budget // need)

    return rows
