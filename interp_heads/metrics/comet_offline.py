"""An offline COMET checkpoint for tests: real COMET code path, untrained head. NOT a quality metric.

:func:`build_offline_comet_checkpoint` builds a ``comet.models.RegressionMetric`` on the local
all-MiniLM-L6-v2 encoder (COMET's ``BERT`` encoder class: MiniLM is a BERT model with a BERT
WordPiece tokenizer; COMET's own ``MiniLM`` class always fetches the ``xlm-roberta-base``
tokenizer from the hub, so it cannot run offline) with a randomly initialised, seeded estimator
head, and saves it as a COMET checkpoint folder (``checkpoints/model.ckpt`` + ``hparams.yaml``)
that ``comet.load_from_checkpoint`` loads without network. Its scores only exercise plumbing.
"""

from __future__ import annotations

from pathlib import Path

from interp_heads.metrics.base import quiet
from interp_heads.metrics.comet_metric import TEST_MARKER
from interp_heads.metrics.embedding import minilm_path, offline_env
from interp_heads.store.atomic import write_atomic
from interp_heads.store.staging import staged_folder

FORMAT = 1
README = """\
# Untrained COMET test checkpoint (interp_heads)

Built by `interp_heads.metrics.build_offline_comet_checkpoint` for tests only.

- Class: comet.models.RegressionMetric; encoder: all-MiniLM-L6-v2 (local, COMET "BERT" encoder).
- The estimator head and layer-mix weights are RANDOM (seed {seed}); nothing was trained.
- Its scores exercise the COMET code path (load_from_checkpoint + predict) offline.
  They are NOT COMET quality scores and must never be reported as COMET.

For real COMET, download a checkpoint (e.g. Unbabel/eamt22-cometinho-da or
Unbabel/wmt22-comet-da) and pass its folder with --comet-model.
"""


def _is_current(folder: Path, encoder: Path) -> bool:
    marker = folder / TEST_MARKER
    if not (marker.is_file() and (folder / "checkpoints" / "model.ckpt").is_file()):
        return False
    return marker.read_text().strip() == f"format={FORMAT} encoder={encoder}"


def build_offline_comet_checkpoint(out_dir: str | Path | None = None, seed: int = 0) -> Path:
    """Build (or reuse) the untrained offline COMET checkpoint folder and return its path.

    Args:
        out_dir: target folder; default ``$INTERP_HEADS_CACHE/comet-test``.
        seed: seed of the random estimator head.

    Returns:
        The folder, holding ``checkpoints/model.ckpt``, ``hparams.yaml``, ``README.md`` and a
        marker file that makes ``CometMetric`` label it as an untrained test checkpoint.
    """
    import torch
    import yaml

    from interp_heads.models.cache import cache_root  # the toolkit's one cache root

    folder = Path(out_dir) if out_dir is not None else cache_root() / "comet-test"
    encoder = minilm_path()
    if _is_current(folder, encoder):
        return folder
    with quiet(), offline_env(), torch.random.fork_rng():
        import pytorch_lightning as pl
        from comet.models import RegressionMetric

        torch.manual_seed(seed)
        model = RegressionMetric(
            encoder_model="BERT",
            pretrained_model=str(encoder),
            hidden_sizes=[256],
            final_activation="Sigmoid",
            nr_frozen_epochs=0.0,
            load_pretrained_weights=True,
            local_files_only=True,
        )
    hparams = dict(model.hparams)
    hparams["load_pretrained_weights"] = False
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        # torch.save writes into a fresh staged folder (store.staging), the text files through
        # the store's writer; the folder is renamed into place (a stale one replaced, a link
        # there removed), never through a link
        with staged_folder(folder) as tmp:
            (tmp / "checkpoints").mkdir()
            state = {
                "state_dict": model.state_dict(),
                "hyper_parameters": hparams,
                "pytorch-lightning_version": pl.__version__,
                "epoch": 0,
                "global_step": 0,
            }
            torch.save(state, tmp / "checkpoints" / "model.ckpt")
            write_atomic(tmp / "hparams.yaml", yaml.safe_dump(hparams))
            write_atomic(tmp / "README.md", README.format(seed=seed))
            write_atomic(tmp / TEST_MARKER, f"format={FORMAT} encoder={encoder}\n")
    except OSError:  # another process built it meanwhile
        if not _is_current(folder, encoder):
            raise
    return folder
