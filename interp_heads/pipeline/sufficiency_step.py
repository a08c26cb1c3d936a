"""The ``sufficiency`` step (``sufficiency = true``): how many heads each task needs.

On every task's eval split, one resumable sweep (``heads/sufficiency/``) keeps only the run's
ranking's TopK heads (every other head ablated with the run's ablation kind), keeps k random heads
(``sufficiency_seeds`` draws) and masks TopK, at MIB's kept fractions and the run's ks
(``analysis.sufficiency.kept_grid``), measured with ``sufficiency_metrics``. It writes the
records, the faithfulness curves, CPR / CMD / necessity area / minimal head set per task and the
plain-words verdicts (``heads/sufficiency*.csv``); the report draws them beside the Cognitive Mirrors figure.
"""

from __future__ import annotations

import time
from dataclasses import replace

from interp_heads.analysis.head_sets import SufficiencyResult
from interp_heads.analysis.sufficiency import SELECTIONS, kept_grid
from interp_heads.interventions.selections import ranked_heads
from interp_heads.pipeline.state import Experiment


def sufficiency_step(exp: Experiment) -> SufficiencyResult:
    """Kept-set curves of every task's ranking, and their summaries, in ``heads/``."""
    from interp_heads.metrics import resolve_metrics
    from interp_heads.sweep.loop import run_sweep

    start, cfg = time.perf_counter(), exp.config
    n_total = exp.model.cfg.n_layers * exp.model.cfg.n_heads
    names = [str(m) for m in cfg.sufficiency_metrics]
    sweep_cfg = replace(
        exp.sweep_config, ks=kept_grid(n_total, exp.ks), selections=list(SELECTIONS),
        seeds=cfg.sufficiency_seeds, metrics=names, elbow=False, exclude_top=False,
    )  # fmt: skip
    result = run_sweep(
        exp.model, exp.eval_tasks, exp.rankings, sweep_cfg, resolve_metrics(names, cfg.comet_model),
        batch_size=exp.batch_size, out_dir=exp.folder.sufficiency_sweep, force=exp.force,
        progress=not exp.quiet, **exp.sweep_options,
    )  # fmt: skip
    rankings = {t: ranked_heads(r) for t, r in exp.rankings.items()}
    res = SufficiencyResult(result.records, n_total, list(exp.ks), rankings)
    folder = exp.folder
    folder.write_frame(folder.sufficiency_parquet, result.records)
    folder.write_frame(folder.sufficiency_curves_csv, res.curves())
    folder.write_frame(folder.sufficiency_csv, res.summary())
    if "accuracy" in names:
        folder.write_frame(folder.sufficiency_verdicts_csv, res.verdicts())
    exp.manifest["sufficiency"] = {"ks": sweep_cfg.ks, "seeds": sweep_cfg.seeds,
                                   "metrics": names}  # fmt: skip
    exp.timings["sufficiency"] = time.perf_counter() - start
    return res
