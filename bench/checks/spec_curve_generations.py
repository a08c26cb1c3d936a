"""How many conditions the spec_curve study's runs generate, without and with the shared store.

Counted from the study's plan (``studies.spec_curve.plan_runs`` and each run's config), without a
model: each generating run sweeps, per task, the unmasked answers its Cognitive Mirrors metrics
read (``sweep.unmasked``), the baseline and ``ks x (TopK + seeds RandomK)``. With the shared store
(``store.shared``) a condition is generated once per distinct key; the key is modelled here by what
``sweep.shared.TaskKeys`` digests:

- the prompts: the task file, its rows (``max_examples``, ``skip``, ``n_rank``, ``n_eval``: the
  same rows in every run of the study) and the generation settings (``max_new_tokens``,
  ``batch_size``; the stop follows the task file's format);
- no mask for the unmasked answers and the baseline (they share one key);
- the mask: kind, scale factor, scope, heads: TopK by the ranking run it reads, RandomK by
  (k, seed) (``exclude_top = false``: the draw ignores the ranking). Two rankings whose top k
  happen to coincide would share too; counted apart here (an upper bound with sharing).

    python -m bench.checks.spec_curve_generations
"""

from __future__ import annotations

from interp_heads.metrics import resolve_metrics
from interp_heads.studies.runner import study_config
from interp_heads.studies.spec_curve import SpecCurve


def condition_keys(config) -> list[tuple]:
    """One key per generation a run of ``config`` makes (duplicates within the run kept)."""
    assert not config.exclude_top and not config.elbow and not config.scaled_ks
    assert set(config.selections) == {"topk", "randomk"}
    needs_unmasked = any(
        getattr(m, "needs_unmasked", False) for m in resolve_metrics(config.metrics)
    )
    needs_unmasked |= str(config.reference) == "unmasked"
    rows = (config.max_examples, config.skip, config.n_rank, config.n_eval)
    scale = config.scale_factor if str(config.ablation) == "scale" else None
    mask = (str(config.ablation), scale, str(config.positions))
    keys = []
    for task in config.tasks:
        prompts = (task, rows, config.max_new_tokens, config.batch_size)
        keys += [(prompts, "unmasked")] * (1 + needs_unmasked)  # the baseline condition too
        for k in config.ks:
            keys.append((prompts, mask, "topk", config.ranking, k))
            keys += [(prompts, mask, "randomk", k, seed) for seed in range(config.seeds)]
    return keys


def values_keys(config) -> list[tuple]:
    """One key per task whose replacement values a run of ``config`` averages (mean kinds)."""
    if str(config.ablation) not in ("mean", "position_mean", "resample"):
        return []
    rows = (config.max_examples, config.skip, config.n_rank, config.n_eval)
    return [(task, rows, str(config.ablation), config.batch_size) for task in config.tasks]


def count(size: str) -> dict:
    """Runs, conditions and rows generated at ``size``, without and with the shared store."""
    study = SpecCurve()
    keys, rows, means = [], {}, []
    runs = [r for r in study.runs(size) if r.steps == "run"]
    for run in runs:
        config = study_config(run, "runs")
        means += values_keys(config)
        for key in condition_keys(config):
            keys.append(key)
            rows[key] = config.n_eval
    unmasked = [k for k in keys if k[1] == "unmasked"]
    return {
        "size": size,
        "runs": len(runs),
        "generations": len(keys),
        "shared": len(set(keys)),
        "unmasked": len(unmasked),
        "shared_unmasked": len(set(unmasked)),
        "rows": sum(rows[k] for k in keys),
        "shared_rows": sum(rows[k] for k in set(keys)),
        "means": len(means),
        "shared_means": len(set(means)),
    }


def main() -> None:
    print("| size | generating runs | generations (rows) | with the shared store (rows) | "
          "ratio | of which unmasked: without, with | mean passes: without, with |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for size in ("small", "full"):
        c = count(size)
        print(f"| {size} | {c['runs']} | {c['generations']} ({c['rows']}) | "
              f"{c['shared']} ({c['shared_rows']}) | {c['generations'] / c['shared']:.2f}x | "
              f"{c['unmasked']}, {c['shared_unmasked']} | {c['means']}, {c['shared_means']} |")  # fmt: skip


if __name__ == "__main__":
    main()
