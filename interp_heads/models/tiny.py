"""A tiny random model for fast tests and examples: no download, built in well under a second.

``tiny_model()`` is a 3-layer Llama-style HookedTransformer with grouped-query attention
(4 query heads sharing 2 key/value heads) and a byte-level tokenizer made on the spot. The model
spec ``"tiny"`` (``models.specs.load_any_model``) loads it on the hooked backend.
``tiny_llama_checkpoint()`` saves the same shapes as a random Llama checkpoint, the tiny model of
the bridge backend (TransformerLens 4 has no HookedTransformer): ``"tiny"`` with
``backend = "bridge"`` (``models.backends.bridge``).
"""

from __future__ import annotations

from pathlib import Path

import torch

from interp_heads.models.convert import attach_tokenizer
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


# The tiny model's shapes, shared by its HookedTransformer and its Llama checkpoint (bridge).
SHAPES = dict(
    n_layers=3, d_model=64, n_heads=4, n_key_value_heads=2, d_head=16, d_mlp=128,
    d_vocab=len(SPECIALS) + 256, n_ctx=128,
)  # fmt: skip


def tiny_config(**overrides) -> HookedTransformerConfig:
    """Config of the tiny model; any field can be overridden (e.g. ``n_key_value_heads=None``)."""
    kw = dict(
        **SHAPES,
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


def random_hf_model(hf_config, seed: int = 0):
    """A random-weight HF causal LM of ``hf_config`` (eager attention), its norms and biases
    perturbed too, so that a wrong weight mapping shows."""
    import transformers

    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(hf_config, attn_implementation="eager")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or "ln" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


def save_checkpoint(hf_model, folder: str | Path) -> Path:
    """``save_pretrained`` of ``hf_model`` next to the byte tokenizer: a folder ``load_model``
    reads as it would read a downloaded checkpoint. Both write into a staged folder
    (``store.staging``) that then replaces ``folder`` whole (a link there is removed, never
    written through)."""
    from interp_heads.store.staging import staged_folder

    folder = Path(folder)
    with staged_folder(
        folder
    ) as tmp:  # written fresh, then moved onto ``folder``, no link followed
        hf_model.save_pretrained(tmp)
        byte_tokenizer().save_pretrained(tmp)
    return folder


def tiny_llama_checkpoint(folder: str | Path, seed: int = 0) -> Path:
    """Save a random ``LlamaForCausalLM`` of the tiny model's shapes, with the byte tokenizer."""
    import transformers

    cfg = transformers.LlamaConfig(
        vocab_size=SHAPES["d_vocab"],
        hidden_size=SHAPES["d_model"],
        intermediate_size=SHAPES["d_mlp"],
        num_hidden_layers=SHAPES["n_layers"],
        num_attention_heads=SHAPES["n_heads"],
        num_key_value_heads=SHAPES["n_key_value_heads"],
        max_position_embeddings=SHAPES["n_ctx"],
        rope_theta=1e5,
        tie_word_embeddings=False,
        initializer_range=0.2,  # larger than HF's 0.02, so greedy tokens vary and a wrong mask shows
    )
    return save_checkpoint(random_hf_model(cfg, seed), folder)
