"""A tiny random model for fast tests and examples: no download, built in well under a second.

``tiny_model()`` is a 3-layer Llama-style HookedTransformer with grouped-query attention
(4 query heads sharing 2 key/value heads) and a byte-level tokenizer made on the spot. The model
spec ``"tiny"`` (``models.specs.load_any_model``) loads it.
"""

from __future__ import annotations

import torch

from interp_heads.models.load import attach_tokenizer
from interp_heads.models.tl_compat import HookedTransformer, HookedTransformerConfig

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def byte_tokenizer():
    """A byte-level tokenizer (256 byte tokens + ChatML specials), built offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {tok: i for i, tok in enumerate(SPECIALS)}
    for ch in sorted(alphabet):
        vocab[ch] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    fast.add_special_tokens({"additional_special_tokens": SPECIALS})
    fast.padding_side = "left"
    return fast


def tiny_config(**overrides) -> HookedTransformerConfig:
    """Config of the tiny model; any field can be overridden (e.g. ``n_key_value_heads=None``)."""
    kw = dict(
        n_layers=3,
        d_model=64,
        n_heads=4,
        n_key_value_heads=2,
        d_head=16,
        d_mlp=128,
        d_vocab=len(SPECIALS) + 256,
        n_ctx=128,
        act_fn="silu",
        normalization_type="RMS",
        positional_embedding_type="rotary",
        rotary_dim=16,
        rotary_adjacent_pairs=False,
        final_rms=True,
        gated_mlp=True,
        default_prepend_bos=False,
        original_architecture="LlamaForCausalLM",
        seed=0,
        device="cpu",
    )
    kw.update(overrides)
    return HookedTransformerConfig(**kw)


def tiny_model(seed: int = 0, **overrides) -> HookedTransformer:
    """A random tiny HookedTransformer (GQA by default) with a byte-level tokenizer."""
    torch.manual_seed(seed)
    cfg = tiny_config(seed=seed, **overrides)
    model = HookedTransformer(cfg)
    model.eval()
    return attach_tokenizer(model, byte_tokenizer())
