"""Hugging Face weights to a HookedTransformer: config, state dict, tokenizer, the model itself.

The weights are kept *unprocessed* (no LayerNorm folding, no centering), so the logits equal the
Hugging Face model's and ``blocks.{l}.attn.hook_z`` holds the per-query-head values.
"""

from __future__ import annotations

import dataclasses

import torch

from interp_heads.errors import ModelLoadError  # noqa: F401 (re-exported: the loaders' error)
from interp_heads.models.families import FAMILIES, FamilyError, family_of
from interp_heads.models.tl_compat import HookedTransformer, HookedTransformerConfig


# --------------------------------------------------------------------------- small helpers
def config_from_hf(hf_config, dtype: torch.dtype = torch.float32) -> HookedTransformerConfig:
    """A HookedTransformerConfig for a Hugging Face config of a registered family (``families``)."""
    try:
        family = family_of(hf_config)
        fields = family.config(hf_config)
    except FamilyError as exc:
        raise ModelLoadError(str(exc)) from None
    return HookedTransformerConfig(**fields, original_architecture=family.architecture, dtype=dtype)


def convert_checkpoint(source, gguf_file: str | None, dtype: torch.dtype):
    """``(cfg, state_dict, tokenizer)`` of a local HF folder or GGUF, loaded with transformers and
    converted to TransformerLens weights (the hooked backend)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from interp_heads.models.gguf_once import parsed_once

    kw = {"gguf_file": gguf_file} if gguf_file else {}
    where = str(source)
    try:
        with parsed_once():  # a GGUF file is read once, not four times
            hf_config = AutoConfig.from_pretrained(where, local_files_only=True, **kw)
            cfg = config_from_hf(hf_config, dtype)
            tokenizer = AutoTokenizer.from_pretrained(where, local_files_only=True, **kw)
            hf_model = AutoModelForCausalLM.from_pretrained(
                where, local_files_only=True, torch_dtype=torch.float32, **kw
            )
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise ModelLoadError(
            f"cannot load {source / (gguf_file or '')}: {exc}".splitlines()[0]
        ) from exc
    state_dict = state_dict_from_hf(hf_model, cfg)
    tokenizer = prepare_tokenizer(tokenizer, cfg.original_architecture)
    return cfg, state_dict, tokenizer


def state_dict_from_hf(hf_model, cfg: HookedTransformerConfig) -> dict[str, torch.Tensor]:
    """Convert HF weights with TransformerLens' own conversion function for the family."""
    sd = FAMILIES.get(cfg.original_architecture).convert(hf_model, cfg)
    return {k: v.detach().to(cfg.dtype).contiguous().clone() for k, v in sd.items()}


_BIASES = {"b", "b_in", "b_out", "b_Q", "b_K", "b_V", "_b_K", "_b_V", "b_O", "b_U"}


def complete_state_dict(model: HookedTransformer, state_dict: dict) -> dict:
    """Zero biases a converter leaves out, drop all-zero entries the config has no place for.

    TransformerLens' converters omit biases a family has none of (GPT-2's unembedding bias,
    Phi-3's MLP biases) and emit zero LayerNorm biases for RMSNorm families; its own loader fills
    the first with zeros (``fill_missing_keys``) and ignores the second. Anything else that does not
    fit stays an error in :func:`build_hooked`.
    """
    expected = model.state_dict()
    out = {
        k: v
        for k, v in state_dict.items()
        if k in expected or not (v.dtype.is_floating_point and not v.any())
    }
    for key, ref in expected.items():
        if key not in out and key.rsplit(".", 1)[-1] in _BIASES:
            out[key] = torch.zeros(ref.shape, dtype=model.cfg.dtype)
    return out


def prepare_tokenizer(tokenizer, arch: str):
    """Make BOS/EOS/PAD explicit. The SmolLM2 GGUF tokenizer prepends id 1 and reports it as EOS.

    TransformerLens expects a tokenizer that prepends BOS and strips it when ``prepend_bos=False``;
    ChatML models get ``default_prepend_bos=False`` in their config (their chat template starts
    with ``<|im_start|>`` itself), and ``<|endoftext|>`` as padding so that no prompt token is
    ever mistaken for a pad.
    """
    vocab = tokenizer.get_vocab()
    if "<|im_end|>" in vocab:  # ChatML models (SmolLM2)
        tokenizer.bos_token = "<|im_start|>"
        tokenizer.eos_token = "<|im_end|>"
        if "<|endoftext|>" in vocab:
            tokenizer.pad_token = "<|endoftext|>"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def build_hooked(
    cfg: HookedTransformerConfig, state_dict, tokenizer, device: str, n_devices: int = 1
) -> HookedTransformer:
    """A HookedTransformer holding ``state_dict`` as is (no weight processing), without init cost.

    ``n_devices > 1``: the layers are split over ``n_devices`` GPUs (TransformerLens'
    ``move_model_modules_to_device``), ``device`` being the first.
    """
    cfg = dataclasses.replace(cfg) if dataclasses.is_dataclass(cfg) else cfg
    cfg.init_weights = False
    cfg.device = device
    cfg.n_devices = n_devices
    model = HookedTransformer(cfg, tokenizer=None, move_to_device=False)
    state_dict = complete_state_dict(model, state_dict)
    missing, unexpected = model.load_state_dict(state_dict, strict=False, assign=True)
    # the only non-parameter buffers are rotary tables and masks, rebuilt by the constructor
    bad = [k for k in missing if not k.endswith(("IGNORE", "mask", "rotary_sin", "rotary_cos"))]
    if bad or unexpected:
        raise ModelLoadError(
            f"weights do not fit the config: missing {bad[:3]}, unexpected {unexpected[:3]}"
        )
    if n_devices > 1:
        model.move_model_modules_to_device()
    else:
        model.to(device, print_details=False)  # no "Moving model to device" on stdout
    model.eval()
    attach_tokenizer(model, tokenizer)
    return model


def attach_tokenizer(model: HookedTransformer, tokenizer) -> HookedTransformer:
    """Give ``model`` this exact tokenizer, left padding.

    TransformerLens' own ``set_tokenizer`` re-loads the tokenizer from its ``name_or_path`` (12 s
    for a GGUF, impossible for one built in memory); this does what it does without re-loading.
    """
    model.tokenizer = tokenizer
    tokenizer.padding_side = "left"
    model.cfg.tokenizer_prepends_bos = len(tokenizer.encode("")) > 0
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model
