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
  (k, seed) (``exclude_top = false``: the draw ignores the ranking; outside TopK it depends on
  the ranking too). Two rankings whose top k happen to coincide would share too; counted apart
  here (an upper bound with sharing).

``--estimate`` adds the minutes the conditions the runs made before the factorial (:data:`BEFORE`,
the one-at-a-time runs from RandomK's pool of every head) do not hold would take on 2 cores, from
the per-condition times the study recorded (:data:`SECONDS`).

    python -m bench.checks.spec_curve_generations [--estimate]
"""

from __future__ import annotations

from interp_heads.metrics import resolve_metrics
from interp_heads.studies.runner import study_config
from interp_heads.studies.spec_curve import SpecCurve


def condition_keys(config) -> list[tuple]:
    """One key per generation a run of ``config`` makes (duplicates within the run kept)."""
    assert not config.elbow and not config.scaled_ks
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
            pool = config.ranking if config.exclude_top else None  # outside TopK: its ranking's
            keys += [(prompts, mask, "randomk", pool, k, seed) for seed in range(config.seeds)]
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


# the runs of the study before the factorial (folders under spec_curve/): every one is reused
BEFORE = {"probe_scale_generated_study", "ablation_atp_scale_generated_study",
          "probe_mean_generated_study", "probe_scale_last_study", "probe_scale_all_study",
          "probe_scale_generated_plain", "ablation_atp_mean_all_plain", "probe_mean_all_plain",
          "ablation_atp_scale_all_plain", "ablation_atp_mean_generated_plain",
          "ablation_atp_mean_last_plain", "ablation_atp_mean_all_study"}  # fmt: skip
# seconds a masked condition of one task's 24 answers takes on 2 cores, from the recorded run
# times (docs/cli.md, "study"; docs/performance.md): a study-format run masking every position
# 7.8 min, one from the prompt's prefix (generated, last) 0.9-2.4 min (1.65), a plain run about
# 0.8 min (the 10 other masked runs' 11.3 min less the 4 prefix ones), each 4 tasks x 12
# masked conditions
SECONDS = {("study", "all"): 7.8 * 60 / 48, ("study", "prefix"): 1.65 * 60 / 48,
           ("plain", "any"): 0.8 * 60 / 48}  # fmt: skip


def _cost(key: tuple) -> float:
    prompts, mask = key[0], key[1]
    if mask == "unmasked":
        return 0.0  # one per task and format: the runs before the factorial made every one
    study = "cognitive_mirrors" in str(prompts[0])
    if not study:
        return SECONDS[("plain", "any")]
    return SECONDS[("study", "all" if mask[2] == "all" else "prefix")]


def estimate(size: str = "full") -> dict:
    """The conditions the factorial adds to the runs made before it, and their minutes."""
    study = SpecCurve()
    before, after = set(), set()
    for run in (r for r in study.runs(size) if r.steps == "run"):
        keys = set(condition_keys(study_config(run, "runs")))
        after |= keys
        if run.folder.split("/", 1)[1] in BEFORE:
            before |= keys
    new = after - before
    return {"conditions": len(after), "reused": len(before), "new": len(new),
            "minutes": sum(_cost(k) for k in new) / 60}  # fmt: skip


def main() -> None:
    import sys

    if "--estimate" in sys.argv:
        e = estimate()
        print(f"full size: {e['conditions']} distinct conditions, {e['reused']} made by the runs "
              f"before the factorial, {e['new']} new: about {e['minutes']:.0f} min on 2 cores")  # fmt: skip
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
