"""Random-weight checkpoints of each model family, built offline for tests and benchmarks.

Each is a small model (2 layers, 4 query heads, grouped-query attention where the family has it)
made from transformers' own config class and saved next to the byte-level tokenizer
(:mod:`interp_heads.models.tiny`: ``random_hf_model``, ``save_checkpoint``), so
``load_model(folder)`` reads it exactly as it would read a downloaded checkpoint. Each family also names the HF module whose *input* is the
concatenation of the per-head outputs (``o_proj`` or its equivalent): a forward-pre-hook there is
the independent reference for a mask on ``blocks.{l}.attn.hook_z``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from interp_heads.heads import Head
from interp_heads.models.tiny import random_hf_model, save_checkpoint

VOCAB = 300  # >= the byte tokenizer's 256 bytes + ChatML specials
_BASE = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    max_position_embeddings=256,
    tie_word_embeddings=False,
    initializer_range=0.2,  # larger than HF's 0.02, so greedy tokens vary and a wrong mask shows
)
_RMS = _BASE | dict(num_key_value_heads=2)


@dataclass(frozen=True)
class FamilySpec:
    """How to build one family's tiny checkpoint and where its heads meet the output projection."""

    name: str
    config_class: str  # in transformers
    kwargs: dict
    out_proj: str  # path of layer i's output projection, with {i}

    def build(self, seed: int = 0):
        import transformers

        return random_hf_model(getattr(transformers, self.config_class)(**self.kwargs), seed)

    def save(self, folder: str | Path, seed: int = 0) -> Path:
        return save_checkpoint(self.build(seed), folder)

    def out_proj_module(self, hf_model, layer: int) -> torch.nn.Module:
        module = hf_model
        for part in self.out_proj.format(i=layer).split("."):
            module = module[int(part)] if part.isdigit() else getattr(module, part)
        return module


_LLAMA_OUT = "model.layers.{i}.self_attn.o_proj"
FAMILY_SPECS: dict[str, FamilySpec] = {
    s.name: s
    for s in [
        FamilySpec("llama", "LlamaConfig", _RMS | dict(rope_theta=1e5), _LLAMA_OUT),
        FamilySpec("mistral", "MistralConfig", _RMS | dict(sliding_window=None), _LLAMA_OUT),
        FamilySpec("qwen2", "Qwen2Config", _RMS, _LLAMA_OUT),
        FamilySpec("qwen3", "Qwen3Config", _RMS | dict(head_dim=16), _LLAMA_OUT),
        FamilySpec(
            "gemma2",
            "Gemma2Config",
            _RMS | dict(head_dim=16, query_pre_attn_scalar=24, sliding_window=4),
            _LLAMA_OUT,
        ),
        FamilySpec(
            "gemma3",
            "Gemma3TextConfig",
            _RMS
            | dict(
                head_dim=16,
                query_pre_attn_scalar=24,
                sliding_window=4,
                layer_types=["sliding_attention", "full_attention"],
                rope_local_base_freq=1e4,
                rope_theta=1e6,
            ),
            _LLAMA_OUT,
        ),
        FamilySpec("phi3", "Phi3Config", _RMS | dict(pad_token_id=0), _LLAMA_OUT),
        FamilySpec("olmo2", "Olmo2Config", _RMS, _LLAMA_OUT),
        FamilySpec(
            "gpt2",
            "GPT2Config",
            dict(
                vocab_size=VOCAB,
                n_embd=64,
                n_layer=2,
                n_head=4,
                n_positions=256,
                initializer_range=0.2,
            ),
            "transformer.h.{i}.attn.c_proj",
        ),
        FamilySpec(
            "gpt_neox",
            "GPTNeoXConfig",
            _BASE | dict(rotary_pct=0.5),
            "gpt_neox.layers.{i}.attention.dense",
        ),
    ]
}


def zero_head_pre_hook(head: int, d_head: int, positions: str = "all"):
    """A forward-pre-hook zeroing one head's slice of an output projection's input, in HF's
    ``generate`` (left padding, one new token a step after the prompt's pass): at every position
    (``all``), the last position of each forward pass (``last``), or in the passes that read one
    generated token, never in the prompt's pass (``generated``; prompts of 2 tokens or more)."""
    if positions not in ("all", "last", "generated"):
        raise ValueError(f"positions: all, last or generated, not {positions!r}")
    cols = slice(head * d_head, (head + 1) * d_head)

    def hook(module, args):
        x = args[0]
        if positions == "generated" and x.shape[1] > 1:
            return None
        x = x.clone()
        if positions == "last":
            x[:, -1, cols] = 0
        else:
            x[..., cols] = 0
        return (x, *args[1:])

    return hook


@torch.no_grad()
def hf_greedy_with_zeroed_head(
    spec, hf_model, tokens, mask, head: Head, model, n_new: int, positions: str = "all"
):
    """HF ``generate``'s greedy tokens with one head's slice of the output projection's input
    zeroed by a forward-pre-hook at ``positions`` (:func:`zero_head_pre_hook`): the reference for
    a zero mask on ``hook_z`` of ``model`` (our conversion, for ``d_head`` and the pad id). No
    stop token on either side."""
    layer, index = head
    d_head, pad = model.cfg.d_head, model.tokenizer.pad_token_id
    hf_model.generation_config.eos_token_id = None
    hook = spec.out_proj_module(hf_model, layer).register_forward_pre_hook(
        zero_head_pre_hook(index, d_head, positions)
    )
    try:
        out = hf_model.generate(
            tokens, attention_mask=mask, max_new_tokens=n_new, do_sample=False, pad_token_id=pad
        )
    finally:
        hook.remove()
    return out[:, tokens.shape[1] :].tolist()
