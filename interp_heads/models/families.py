"""Model families a local Hugging Face checkpoint can be loaded from, on the ``hooked`` backend.

Each family maps a transformers config to TransformerLens' ``HookedTransformerConfig`` fields and
names TransformerLens' own weight converter for it. TransformerLens 2.18 builds such configs only
from hub names (its local-folder path calls the hub for tokenizers and fails for most families), so
the mapping is written out here, field by field, from the HF config alone; the converted weights are
checked against the HF model's logits and hooks in ``tests/unit/models/test_families.py``.

Adding a family is one mapping function and one :func:`register` line; the families live in
:data:`FAMILIES`, an ``interp_heads.registry.Registry`` like every other extension point, each under
its architecture with its model type as an alias.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from interp_heads.registry import Registry

MAX_CTX = 2048  # TransformerLens allocates an n_ctx x n_ctx causal mask per layer


# Families the bridge backend has been checked on (tests/unit/models/test_bridge.py, bench/checks/families.py).
BRIDGE_FAMILIES = {
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "Phi3ForCausalLM",
    "Olmo2ForCausalLM",
    "GPT2LMHeadModel",
    "GPTNeoXForCausalLM",
}


class FamilyError(RuntimeError):
    """A checkpoint whose family (or a feature of it) the hooked backend cannot serve."""


@dataclass(frozen=True)
class Family:
    """One architecture: its HF class name, config mapping and TransformerLens weight converter."""

    architecture: str
    config: Callable[[object], dict]
    converter: str  # name in transformer_lens.pretrained.weight_conversions
    model_type: str = ""  # the HF config's ``model_type`` (a GGUF's config names only this)

    @property
    def name(self) -> str:
        """The registry's name of the family: its HF architecture."""
        return self.architecture

    @property
    def aliases(self) -> tuple[str, ...]:
        return (self.model_type,) if self.model_type else ()

    def convert(self, hf_model, cfg) -> dict:
        from transformer_lens.pretrained import weight_conversions

        return getattr(weight_conversions, self.converter)(hf_model, cfg)


FAMILIES: Registry[Family] = Registry("model family")


def register(architecture: str, model_type: str, converter: str):
    """Decorator: register a config mapping under its architecture, its model type an alias."""

    def wrap(fn: Callable[[object], dict]) -> Callable[[object], dict]:
        FAMILIES.register(Family(architecture, fn, converter, model_type))
        return fn

    return wrap


def architectures() -> list[str]:
    """The registered families' architectures, sorted."""
    return sorted(FAMILIES.get(name).architecture for name in FAMILIES)


# Families whose HF implementation TransformerLens 2.18 has no component for.
UNSERVED = {
    "Olmo2ForCausalLM": "OLMo 2 normalises after attention and MLP (post-norm) and applies q/k "
    "norm over the whole projection, which TransformerLens 2.18 has no component for",
}


def family_of(hf_config) -> Family:
    """The registered family of a transformers config; one-line :class:`FamilyError` otherwise."""
    arch = (getattr(hf_config, "architectures", None) or [""])[0]
    model_type = getattr(hf_config, "model_type", "")
    for name in (arch, model_type):  # the model type alone (a GGUF's config) names it too
        if name and name in FAMILIES:
            return FAMILIES.get(name)
    arch = arch or model_type
    why = UNSERVED.get(arch)
    served = ", ".join(architectures())
    from interp_heads.models.tl_compat import BRIDGE_ENV

    bridge = f"; the bridge backend serves it ({BRIDGE_ENV})" if arch in BRIDGE_FAMILIES else ""
    raise FamilyError(
        f"architecture {arch!r} is not supported by the hooked backend"
        + (f" ({why})" if why else "")
        + f"; supported: {served}{bridge}"
    )


# --------------------------------------------------------------------------- shared pieces
def _head_dim(c) -> int:
    d = getattr(c, "head_dim", None)
    return d if isinstance(d, int) and d > 0 else c.hidden_size // c.num_attention_heads


def _kv_heads(c) -> int | None:
    n_kv = getattr(c, "num_key_value_heads", None) or c.num_attention_heads
    return n_kv if n_kv != c.num_attention_heads else None


def _rope_theta(c) -> float:
    theta = getattr(c, "rope_theta", None)
    if theta is None:  # transformers 5 keeps it in rope_parameters
        theta = (getattr(c, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
    return float(theta)


def _plain_rope(c) -> None:
    scaling = getattr(c, "rope_scaling", None)
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type"))
    if kind not in (None, "default"):
        raise FamilyError(f"rope scaling {scaling} is not supported by the hooked backend")


def _rms_gated(c) -> dict:
    """Fields shared by the Llama-like families (RMSNorm, gated MLP, rotary, GQA)."""
    _plain_rope(c)
    d_head = _head_dim(c)
    return dict(
        d_model=c.hidden_size,
        d_head=d_head,
        n_heads=c.num_attention_heads,
        n_key_value_heads=_kv_heads(c),
        d_mlp=c.intermediate_size,
        n_layers=c.num_hidden_layers,
        n_ctx=min(c.max_position_embeddings, MAX_CTX),
        eps=c.rms_norm_eps,
        d_vocab=c.vocab_size,
        act_fn=getattr(c, "hidden_act", None) or c.hidden_activation,
        normalization_type="RMS",
        positional_embedding_type="rotary",
        rotary_adjacent_pairs=False,
        rotary_dim=d_head,
        rotary_base=_rope_theta(c),
        final_rms=True,
        gated_mlp=True,
    )


def _sliding(c, types: list[str] | None) -> dict:
    """Local (sliding-window) attention fields from HF's ``layer_types`` or ``sliding_window``."""
    window = getattr(c, "sliding_window", None)
    if not window:
        return {}
    if types is None:
        types = getattr(c, "layer_types", None) or ["sliding_attention"] * c.num_hidden_layers
    attn_types = ["local" if t == "sliding_attention" else "global" for t in types]
    if "local" not in attn_types:
        return {}
    return dict(use_local_attn=True, window_size=window, attn_types=attn_types)


# --------------------------------------------------------------------------- families
@register("LlamaForCausalLM", "llama", "convert_llama_weights")
def _llama(c) -> dict:
    # ChatML checkpoints (SmolLM2) start their template with <|im_start|> themselves
    return _rms_gated(c) | dict(default_prepend_bos=False)


@register("MistralForCausalLM", "mistral", "convert_mistral_weights")
def _mistral(c) -> dict:
    return _rms_gated(c) | _sliding(c, None)


@register("Qwen2ForCausalLM", "qwen2", "convert_qwen2_weights")
def _qwen2(c) -> dict:
    if getattr(c, "use_sliding_window", False):
        raise FamilyError("Qwen2 with use_sliding_window is not supported by the hooked backend")
    return _rms_gated(c) | dict(default_prepend_bos=False)


@register("Qwen3ForCausalLM", "qwen3", "convert_qwen3_weights")
def _qwen3(c) -> dict:
    if getattr(c, "use_sliding_window", False):
        raise FamilyError("Qwen3 with use_sliding_window is not supported by the hooked backend")
    return _rms_gated(c) | dict(use_qk_norm=True, default_prepend_bos=False)


@register("Phi3ForCausalLM", "phi3", "convert_phi3_weights")
def _phi3(c) -> dict:
    if getattr(c, "partial_rotary_factor", 1.0) != 1.0:
        raise FamilyError("Phi-3 with partial rotary embeddings is not supported")
    return _rms_gated(c) | _sliding(c, None)


def _gemma(c, *, qk_norm: bool) -> dict:
    scalar = getattr(c, "query_pre_attn_scalar", None) or _head_dim(c)
    return _rms_gated(c) | dict(
        use_attn_scale=True,
        attn_scale=float(scalar) ** 0.5,
        use_normalization_before_and_after=True,
        attn_scores_soft_cap=float(getattr(c, "attn_logit_softcapping", None) or -1.0),
        output_logits_soft_cap=float(getattr(c, "final_logit_softcapping", None) or -1.0),
        use_qk_norm=qk_norm,
        act_fn=getattr(c, "hidden_activation", None) or c.hidden_act,
    )


@register("Gemma2ForCausalLM", "gemma2", "convert_gemma_weights")
def _gemma2(c) -> dict:
    return _gemma(c, qk_norm=False) | _sliding(c, None)


@register("Gemma3ForCausalLM", "gemma3_text", "convert_gemma_weights")
def _gemma3(c) -> dict:
    out = _gemma(c, qk_norm=True) | _sliding(c, None)
    local = getattr(c, "rope_local_base_freq", None)
    if local is not None:
        out["rotary_base_local"] = float(local)
    return out


@register("GPT2LMHeadModel", "gpt2", "convert_gpt2_weights")
def _gpt2(c) -> dict:
    n_ctx = getattr(c, "n_ctx", None) or c.n_positions
    return dict(
        d_model=c.n_embd,
        d_head=c.n_embd // c.n_head,
        n_heads=c.n_head,
        d_mlp=getattr(c, "n_inner", None) or 4 * c.n_embd,
        n_layers=c.n_layer,
        n_ctx=min(n_ctx, MAX_CTX),
        eps=c.layer_norm_epsilon,
        d_vocab=c.vocab_size,
        act_fn=c.activation_function,
        use_attn_scale=bool(getattr(c, "scale_attn_weights", True)),
        scale_attn_by_inverse_layer_idx=bool(c.scale_attn_by_inverse_layer_idx),
        normalization_type="LN",
        positional_embedding_type="standard",
        default_prepend_bos=True,
    )


@register("GPTNeoXForCausalLM", "gpt_neox", "convert_neox_weights")
def _neox(c) -> dict:
    d_head = c.hidden_size // c.num_attention_heads
    pct = getattr(c, "rotary_pct", None) or getattr(c, "partial_rotary_factor", 1.0)
    _plain_rope(c)
    return dict(
        d_model=c.hidden_size,
        d_head=d_head,
        n_heads=c.num_attention_heads,
        d_mlp=c.intermediate_size,
        n_layers=c.num_hidden_layers,
        n_ctx=min(c.max_position_embeddings, MAX_CTX),
        eps=c.layer_norm_eps,
        d_vocab=c.vocab_size,
        act_fn=c.hidden_act,
        parallel_attn_mlp=bool(getattr(c, "use_parallel_residual", True)),
        positional_embedding_type="rotary",
        rotary_adjacent_pairs=False,
        rotary_dim=round(pct * d_head),
        rotary_base=_rope_theta(c),
        normalization_type="LN",
        default_prepend_bos=True,
    )
