"""The sufficient-set search against the true minimum on tiny models: old greedy vs patient search.

    OMP_NUM_THREADS=1 flock /tmp/interp_cpu.lock python -m bench.checks.search_minimality

For the random-weight tiny model (3 seeds, 12 heads) on the toy echo task and the planted model
(8 heads) on its successor task, under ``mean`` and ``position_mean`` ablation, every head subset
is evaluated once with the sweep's own mask (``interventions.masks.mask_heads``, forward only,
not the search's code), giving f of every kept set. Then per target (0.9, 0.7, 0.5) the search
runs as it was (patience 0, no 1-minimality pass, f >= target only) and as it is now (the band
[target, 1.1], the 1-minimality pass) at several patiences. Per run: size, heads over the true
minimum (the smallest kept set with f in the search's own acceptance rule), whether the set is
1-minimal under that rule (checked on the brute-force table), trials and seconds. Writes
``bench/results/search_minimality.json``.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import torch

from bench.common import result_path, write_result

TARGETS = (0.9, 0.7, 0.5)
UPPER = 1.1
PATIENCES = (0, 1, 2, 4, 8, 16)
KINDS = ("mean", "position_mean")


def _toy():
    from interp_heads.tasks.schema import Example, Task

    words = ["ab", "cd", "ef", "gh", "ij", "kl", "mn", "op"]
    return Task("toy", [Example(str(i), "toy", f"say {w} ", w, question=f"say {w}")
                        for i, w in enumerate(words)])  # fmt: skip


def _successor(model):
    from interp_heads.analysis.known_heads import ordinal_token_ids
    from interp_heads.tasks.schema import Example, Task

    tok = model.tokenizer
    digits = [tok.decode([i]) for i in ordinal_token_ids(model)["digits"]]
    return Task("succ", [Example(f"d{i}", "succ", a + " ", b, question=a)
                         for i, (a, b) in enumerate(zip(digits[:-1], digits[1:], strict=True))])  # fmt: skip


def every_f(model, task, kind) -> dict[frozenset, float]:
    """f of every kept set (frozenset of heads), by the sweep's mask."""
    from interp_heads.attribution.inputs import answer_logprob, final_logits, make_batches
    from interp_heads.interventions.kinds import get_kind
    from interp_heads.interventions.masks import mask_heads

    batches = make_batches(model, task, corrupted=False)
    values = get_kind(kind).values(model, [e.prompt for e in task.examples])
    heads = [(la, h) for la in range(model.cfg.n_layers) for h in range(model.cfg.n_heads)]

    def m(ablated) -> float:
        total, n = 0.0, 0
        with torch.no_grad(), mask_heads(model, ablated, kind, values=values, warn_if_idle=False):
            for b in batches:
                resid = model(b.clean, attention_mask=b.mask, stop_at_layer=model.cfg.n_layers)
                total += float(answer_logprob(final_logits(model, resid), b).sum())
                n += len(b)
        return total / n

    m_all, m_none = m([]), m(heads)
    out = {}
    for r in range(len(heads) + 1):
        for kept in itertools.combinations(heads, r):
            gone = [h for h in heads if h not in kept]
            out[frozenset(kept)] = (m(gone) - m_none) / (m_all - m_none)
    return out


def _ok(f, target, upper):
    return f >= target - 1e-6 and (upper is None or f <= upper + 1e-6)


def judge(table, heads, target, upper) -> dict:
    kept = frozenset(heads)
    true_min = min(len(s) for s, f in table.items() if _ok(f, target, upper))
    one_min = all(not _ok(table[kept - {h}], target, upper) for h in kept)
    return {
        "size": len(kept),
        "true_min": true_min,
        "over": len(kept) - true_min,
        "one_minimal": one_min,
        "f_brute": table[kept],
    }


def main() -> None:
    from interp_heads.analysis.head_search import search_heads
    from interp_heads.attribution.inputs import make_batches
    from interp_heads.testing.planted import planted_model
    from interp_heads.testing.tiny import tiny_model

    cases = [(f"tiny seed {s}", tiny_model(seed=s), _toy()) for s in (0, 1, 2)]
    planted = planted_model()
    cases.append(("planted", planted, _successor(planted)))
    rows = []
    for name, model, task in cases:
        batches = make_batches(model, task, corrupted=False)
        for kind in KINDS:
            t0 = time.perf_counter()
            table = every_f(model, task, kind)
            brute_s = time.perf_counter() - t0
            for target in TARGETS:
                runs = [("old: patience 0, no pass, one-sided", dict(patience=0, minimal=False,
                                                                     upper=None))]  # fmt: skip
                runs += [(f"patience {p}, no pass", dict(patience=p, minimal=False))
                         for p in (0, 8)]  # fmt: skip
                runs += [(f"new: patience {p} + 1-minimal pass", dict(patience=p))
                         for p in PATIENCES]  # fmt: skip
                for label, kw in runs:
                    t0 = time.perf_counter()
                    try:
                        path = search_heads(model, batches, target=target, ablation=kind, **kw)
                    except Exception as exc:  # noqa: BLE001 - nothing to search for: recorded
                        rows.append({"case": name, "kind": kind, "target": target,
                                     "search": label, "error": str(exc)})  # fmt: skip
                        continue
                    secs = time.perf_counter() - t0
                    row = judge(table, path.heads, target, kw.get("upper", UPPER))
                    rows.append({"case": name, "kind": kind, "target": target, "search": label,
                                 **row, "f_search": path.f, "trials": len(path.trials),
                                 "seconds": round(secs, 3), "brute_seconds": round(brute_s, 1)})  # fmt: skip
                    print(rows[-1], flush=True)
    summary = {}
    for label in dict.fromkeys(r["search"] for r in rows):
        got = [r for r in rows if r["search"] == label and "error" not in r]
        summary[label] = {
            "cases": len(got),
            "within_1_of_true_min": sum(r["over"] <= 1 for r in got),
            "exact_true_min": sum(r["over"] == 0 for r in got),
            "one_minimal": sum(r["one_minimal"] for r in got),
            "mean_size": float(np.mean([r["size"] for r in got])),
            "mean_trials": float(np.mean([r["trials"] for r in got])),
            "total_seconds": round(sum(r["seconds"] for r in got), 2),
        }
    write_result(result_path("search_minimality.json"),
                 {"summary": summary, "rows": rows,
                  "note": "2 shared CPU cores (other helpers' jobs outside the lock)"})  # fmt: skip


def steps_main() -> None:
    """``--steps``: the default search at smaller steps (one head per step at 0.01 on these
    models) against the true minima the main run recorded (no brute force again); writes
    ``bench/results/search_minimality_steps.json``."""
    import json

    from interp_heads.analysis.head_search import search_heads
    from interp_heads.attribution.inputs import make_batches
    from interp_heads.testing.planted import planted_model
    from interp_heads.testing.tiny import tiny_model

    done = json.loads(result_path("search_minimality.json").read_text())["rows"]
    true_min = {(r["case"], r["kind"], r["target"]): r["true_min"] for r in done
                if r["search"].startswith("new") and "error" not in r}  # fmt: skip
    models = {f"tiny seed {s}": (tiny_model(seed=s), _toy()) for s in (0, 1)}
    planted = planted_model()
    models["planted"] = (planted, _successor(planted))
    rows = []
    for (case, kind, target), best in true_min.items():
        model, task = models[case]
        batches = make_batches(model, task, corrupted=False)
        for step in (0.1, 0.05, 0.01):
            t0 = time.perf_counter()
            path = search_heads(model, batches, target=target, ablation=kind, step=step)
            rows.append({"case": case, "kind": kind, "target": target, "step": step,
                         "size": len(path.heads), "true_min": best,
                         "over": len(path.heads) - best, "trials": len(path.trials),
                         "seconds": round(time.perf_counter() - t0, 3)})  # fmt: skip
            print(rows[-1], flush=True)
    summary = {step: {"cases": len(g), "within_1": sum(r["over"] <= 1 for r in g),
                      "exact": sum(r["over"] == 0 for r in g),
                      "mean_trials": float(np.mean([r["trials"] for r in g])),
                      "total_seconds": round(sum(r["seconds"] for r in g), 2)}
               for step in (0.1, 0.05, 0.01)
               for g in [[r for r in rows if r["step"] == step]]}  # fmt: skip
    write_result(result_path("search_minimality_steps.json"),
                 {"summary": summary, "rows": rows,
                  "note": "2 shared CPU cores (other helpers' jobs outside the lock)"})  # fmt: skip


if __name__ == "__main__":
    import sys

    steps_main() if "--steps" in sys.argv else main()
