"""Model backends: one model interface, one file per backend, one registry.

What the toolkit needs from a model is the same on every backend: hook names
(``blocks.{l}.attn.hook_z`` holds the per-query-head values ``[batch, pos, head_index, d_head]``),
shape facts from ``model.cfg`` (``n_layers``, ``n_heads``, ``d_head``, ``d_vocab``, ``device``,
``dtype``, and :func:`n_kv_heads`), a tokenizer with left padding, a forward with hooks
(``model.hooks``), and an identity (``model_info.set_source``, with its ``backend``, read by
``store.resume.model_fingerprint``, so runs of two backends never resume each other).

A backend is a :class:`Backend` registered in :data:`BACKENDS` (``@BACKENDS.register`` above the
class reads its ``name``). It owns how a model is loaded (``load``, and ``tiny``, the random test
model) and every behaviour that differs between model classes: the final logits from the
residual stream, the KV-cached generation step, the patching differences (a frozen prefix cache,
the hook names activations are cached under, positions of a forward from a residual input) and
a text's own tokens (whether the tokenizer puts BOS before any text). Callers ask
``backend_of(model)`` (e.g. ``backend_of(model).final_logits(model, resid)``) and never test which
backend they have. The built-ins (the files this package imports):

- ``hooked`` (:mod:`.hooked`): TransformerLens 2.18's HookedTransformer with converted weights,
  the default environment;
- ``bridge`` (:mod:`.bridge`): TransformerLens 4's TransformerBridge around the Hugging Face
  model, the tl4 environment (``make setup-tl4``).

Importing this package imports no torch: the backends import what they run when asked.
"""

# the import order is the registration order: the order names are listed in (help, tables)
# isort: off
from interp_heads.models.backends import hooked, bridge  # noqa: F401 (each registers itself)

# isort: on
from interp_heads.models.backends.base import (
    BACKENDS,
    Backend,
    backend_of,
    get_backend,
    n_kv_heads,
)
from interp_heads.models.families import BRIDGE_FAMILIES

__all__ = ["BACKENDS", "BRIDGE_FAMILIES", "Backend", "backend_of", "get_backend", "n_kv_heads"]
