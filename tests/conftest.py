"""Shared fixtures: seeded RNGs, the tiny random model, the embedded SmolLM2 (session-scoped)."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def _seed_everything():
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    yield


@pytest.fixture
def untyped():
    """Annotations unchecked (no beartype), as a user calls the API: a wrong argument type then
    reaches the function's own check, whose one-line error is what the test looks at."""
    import jaxtyping

    jaxtyping.config.update("jaxtyping_disable", True)
    yield
    jaxtyping.config.update("jaxtyping_disable", False)


@pytest.fixture
def tiny():
    """The tiny random model: a HookedTransformer, or in the tl4 environment (no hooked backend)
    the same shapes as a random Llama checkpoint on the bridge, so the same tests run there."""
    from interp_heads.models.tl_compat import HAS_HOOKED

    if HAS_HOOKED:
        from interp_heads.testing.tiny import tiny_model

        return tiny_model()
    from interp_heads.models.specs import load_any_model

    return load_any_model("tiny", backend="bridge")


@pytest.fixture(scope="session")
def smollm():
    """The embedded SmolLM2-135M-Instruct, loaded once per session (cached converted weights)."""
    from interp_heads.models.load import load_model

    return load_model("smollm2-135m", device="cpu")


@pytest.fixture(scope="session")
def hf_smollm():
    """The Hugging Face model de-quantised from the same GGUF, for independent comparisons."""
    from transformers import AutoModelForCausalLM

    from interp_heads.models.load import embedded_gguf_path

    path = embedded_gguf_path()
    return AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32
    ).eval()


def pytest_configure(config):
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
