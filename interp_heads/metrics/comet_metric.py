"""COMET (Unbabel) on generated answers: src = question, mt = first line of the generation, ref = answer.

``CometMetric(model)`` takes a COMET model name (e.g. ``Unbabel/eamt22-cometinho-da``: taken from
the local Hugging Face cache; downloaded from the hub, as ``comet.download_model`` does, only when
``HF_HUB_OFFLINE`` is not set) or a local checkpoint: a ``.ckpt`` file or a folder holding
``checkpoints/model.ckpt`` and ``hparams.yaml``. The model is loaded on first use and cached per
checkpoint in-process; the encoder named in its ``hparams.yaml`` is looked up locally first.
Anything that stops a checkpoint from loading raises :class:`MetricUnavailable` with a one-line reason.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from interp_heads.errors import one_line
from interp_heads.metrics.base import (
    Metric,
    MetricContext,
    MetricItem,
    MetricUnavailable,
    first_line,
    quiet,
)
from interp_heads.metrics.registry import METRICS

TEST_MARKER = "INTERP_HEADS_UNTRAINED_TEST_CHECKPOINT"
_MODELS: dict[str, object] = {}


def hub_offline() -> bool:
    """Whether the Hugging Face hub must not be contacted (``HF_HUB_OFFLINE`` set)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return True
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except Exception:  # pragma: no cover - huggingface_hub always ships with transformers
        return False


def _looks_like_path(spec: str) -> bool:
    return spec.startswith(("/", ".", "~")) or spec.endswith(".ckpt") or spec.count("/") > 1


def _checkpoint_in(path: Path) -> Path:
    """The ``.ckpt`` file for a checkpoint file or folder given by the user."""
    if path.is_file():
        return path
    for cand in (path / "checkpoints" / "model.ckpt", path / "model.ckpt"):
        if cand.is_file():
            return cand
    raise MetricUnavailable(f"no COMET checkpoint (checkpoints/model.ckpt) in folder {path}")


def resolve_checkpoint(model: str) -> Path:
    """Path of the ``.ckpt`` file for a COMET model name or local checkpoint path."""
    path = Path(model).expanduser()
    if path.exists():
        return _checkpoint_in(path)
    if _looks_like_path(model):
        raise MetricUnavailable(f"COMET checkpoint not found: {model}")
    try:
        from huggingface_hub import snapshot_download

        return _checkpoint_in(Path(snapshot_download(repo_id=model, local_files_only=True)))
    except Exception as exc:
        if hub_offline():
            raise MetricUnavailable(
                f"COMET model {model!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set"
            ) from exc
    try:
        with quiet():
            return _checkpoint_in(Path(snapshot_download(repo_id=model)))
    except MetricUnavailable:
        raise
    except Exception as exc:
        reason = one_line(exc)[:300]
        raise MetricUnavailable(f"cannot download COMET model {model!r}: {reason}") from exc


def _display_name(model: str) -> str:
    m = re.search(r"models--([^/\\]+?)--([^/\\]+)", model)
    if m:
        return f"{m.group(1)}/{m.group(2)}"
    path = Path(model).expanduser()
    if path.suffix == ".ckpt":
        path = path.parent.parent if path.parent.name == "checkpoints" else path.parent
    return path.name if _looks_like_path(model) or path.exists() else model


def load_comet(ckpt: str | Path):
    """Load a COMET checkpoint (cached per resolved path); encoder files are looked up locally first."""
    key = str(Path(ckpt).resolve())
    if key in _MODELS:
        return _MODELS[key]
    with quiet():
        try:
            from comet import load_from_checkpoint
        except Exception as exc:
            raise MetricUnavailable(f"unbabel-comet is not importable: {one_line(exc)}") from exc
        try:
            model = load_from_checkpoint(key, local_files_only=True)
        except Exception as exc:
            if hub_offline():
                raise MetricUnavailable(
                    f"cannot load COMET checkpoint {key} offline: {one_line(exc)}"
                ) from exc
            try:
                model = load_from_checkpoint(key)
            except Exception as exc2:
                raise MetricUnavailable(
                    f"cannot load COMET checkpoint {key}: {one_line(exc2)}"
                ) from exc2
    model.eval()
    _MODELS[key] = model
    return model


log = logging.getLogger(__name__)

DEFAULT_COMET_MODEL = "Unbabel/wmt22-comet-da"


@METRICS.register
class CometMetric(Metric):
    """A real COMET model scoring (question, first line of generation, answer) triples.

    Args:
        model: COMET model name or local checkpoint path (file or folder).
        batch_size: prediction batch size.
        gpus: 0 for CPU, 1 for one GPU; default: 1 when CUDA is available.
    """

    name = "comet"
    is_comet = True

    @dataclass(frozen=True)
    class Options:
        # ``kept_in``: the run config's digest has always held it, also at its default
        comet_model: str | None = field(
            default=None,
            metadata={"help": "COMET checkpoint name or path", "kept_in": ("run",)},
        )

    @classmethod
    def build(cls, options, ctx: MetricContext) -> Metric:
        """The COMET metric of its ``comet_model`` option (default ``DEFAULT_COMET_MODEL``),
        loaded; when it cannot load, the MiniLM stand-in with a printed note (``ctx.allow_fallback``)
        or :class:`MetricUnavailable`. A checkpoint file or folder named by the user that cannot
        load is always refused (:class:`MetricUnavailable`): the stand-in is for the default."""
        from interp_heads.metrics.embedding import MiniLMCosine

        comet_model = options.comet_model
        _check_comet_environment()
        _check_named_path(comet_model)
        metric = cls(comet_model or DEFAULT_COMET_MODEL)
        try:
            metric.load()
        except MetricUnavailable as exc:
            if not ctx.allow_fallback or _is_local(comet_model):
                raise  # a checkpoint file or folder given by the user must load: no stand-in
            note = fallback_note(str(exc))
            log.debug(note)
            print(note, file=sys.stderr)
            return MiniLMCosine()
        return metric

    def __init__(self, model: str, batch_size: int = 16, gpus: int | None = None):
        self.model = str(model)
        self.batch_size = batch_size
        self.gpus = gpus
        self._ckpt: Path | None = None

    @property
    def checkpoint(self) -> Path:
        """The resolved ``.ckpt`` file (may download; raises :class:`MetricUnavailable`)."""
        if self._ckpt is None:
            self._ckpt = resolve_checkpoint(self.model)
        return self._ckpt

    @property
    def is_test_checkpoint(self) -> bool:
        """True for the untrained checkpoint of :func:`build_offline_comet_checkpoint`."""
        path = Path(self.model).expanduser()
        if not path.exists():
            return False
        root = path if path.is_dir() else path.parent
        return any((p / TEST_MARKER).is_file() for p in (root, root.parent))

    @property
    def label(self) -> str:  # type: ignore[override]
        if self.is_test_checkpoint:
            return "COMET (untrained test checkpoint; plumbing only, not a quality score)"
        return f"COMET ({_display_name(self.model)})"

    def load(self):
        """Load (once per process) and return the COMET model; raises :class:`MetricUnavailable`."""
        return load_comet(self.checkpoint)

    def score(self, items: list[MetricItem]) -> list[float]:
        """COMET segment scores, one per item (about [0, 1] for DA models)."""
        if not items:
            return []
        model = self.load()
        gpus = self.gpus
        if gpus is None:
            import torch

            gpus = 1 if torch.cuda.is_available() else 0
        data = [{"src": it.src, "mt": first_line(it.mt), "ref": it.ref} for it in items]
        with quiet():
            out = model.predict(data, batch_size=self.batch_size, gpus=gpus, progress_bar=False)
        return [float(s) for s in out.scores]


def fallback_note(reason: str) -> str:
    """The one-line note printed when COMET falls back to the MiniLM stand-in."""
    return (
        f"COMET unavailable ({reason}); using MiniLM cosine, an offline stand-in. "
        "To enable COMET give a checkpoint: --comet-model PATH_OR_NAME (ablate) or comet_model = ... (run config)."
    )


def _check_named_path(comet_model: str | None) -> None:
    """A COMET checkpoint named as a path must exist (no silent fallback for a typo)."""
    from pathlib import Path

    if comet_model is None:
        return
    looks_like_path = (
        comet_model.startswith((".", "/", "~"))
        or comet_model.count("/") > 1
        or comet_model.endswith(".ckpt")
    )  # a hub name is "org/name"
    if looks_like_path and not Path(comet_model).expanduser().exists():
        raise MetricUnavailable(f"comet model {comet_model!r}: no such file or folder")


def _is_local(comet_model: str | None) -> bool:
    """Whether ``comet_model`` names an existing file or folder (not a hub name)."""
    return comet_model is not None and Path(comet_model).expanduser().exists()


def _check_comet_environment() -> None:
    """COMET cannot be installed next to transformers 5 (the tl4 environment): say where it runs."""
    import importlib.metadata

    if int(importlib.metadata.version("transformers").split(".")[0]) >= 5:
        raise MetricUnavailable(
            "COMET needs transformers < 5 (unbabel-comet 2.2.7), not this environment's "
            f"{importlib.metadata.version('transformers')}; run without comet here and score the "
            "run's generations from the default environment (make setup): "
            "interp-heads score RUN --metrics comet"
        )
