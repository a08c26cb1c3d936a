"""Sweep throughput: packed vs one condition at a time, against Hugging Face ``generate`` (by hand).

For a random-weight HookedTransformer of a real shape (no download) and for the embedded SmolLM2,
runs the same small sweep (``--conditions`` masked conditions x ``--examples`` prompts of about 40
tokens, plain format so both libraries see the same tokens, ``--new-tokens`` new tokens, accuracy
scored; ablation means and the mask check included) one condition at a time and packed, and times
Hugging Face ``generate`` (``LlamaForCausalLM``, random weights of the same shape; for the embedded
model the same GGUF de-quantised) on the same prompts at the same batch sizes. Random-weight models
rarely emit a line break or EOS, so they generate every new token; HF is forced to do the same.
With ``--seed-figure`` it also times the Cognitive Mirrors figure sweep (the grid of configs/seed_figure.toml,
fixed head order instead of attribution) on the embedded model; without it, that time is estimated
from the packed rate.
Writes bench/results/sweep_<device>_<shape>.json.

    .venv/bin/python -m bench.speed.bench_sweep [--device cuda] [--shape smollm2|llama-1b|llama-8b]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
import warnings
from pathlib import Path

import torch

from bench.common import ROOT, result_path

SHAPES = {  # d_model, n_layers, n_heads, n_kv_heads, d_head, d_mlp, d_vocab, rope base, tied
    "smollm2": (576, 30, 9, 3, 64, 1536, 49152, 1e5, True),
    "llama-1b": (2048, 16, 32, 8, 64, 8192, 128256, 5e5, True),
    "llama-8b": (4096, 32, 32, 8, 128, 14336, 128256, 5e5, False),
}
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split()
SEED_FIGURE_CONFIG = ROOT / "configs" / "seed_figure.toml"


def random_models(shape: str, device: str, dtype: torch.dtype, tokenizer):
    """A random HookedTransformer of ``shape`` and a random ``LlamaForCausalLM`` of the same shape."""
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    from transformers import LlamaConfig, LlamaForCausalLM

    from interp_heads.models.load import attach_tokenizer

    d, n_layers, n_heads, n_kv, d_head, d_mlp, vocab, base, tied = SHAPES[shape]
    cfg = HookedTransformerConfig(
        n_layers=n_layers, d_model=d, n_heads=n_heads, n_key_value_heads=n_kv, d_head=d_head, d_mlp=d_mlp,
        d_vocab=vocab, n_ctx=2048, act_fn="silu", normalization_type="RMS", positional_embedding_type="rotary",
        rotary_dim=d_head, rotary_base=base, rotary_adjacent_pairs=False, final_rms=True, gated_mlp=True,
        default_prepend_bos=False, original_architecture="LlamaForCausalLM", device=device, dtype=dtype, seed=0,
    )  # fmt: skip
    torch.manual_seed(0)
    with torch.device(device):  # initialise on the device: an 8B model is slow to build on a CPU
        ours = attach_tokenizer(HookedTransformer(cfg).eval(), tokenizer)
    hf_cfg = LlamaConfig(
        vocab_size=vocab, hidden_size=d, intermediate_size=d_mlp, num_hidden_layers=n_layers,
        num_attention_heads=n_heads, num_key_value_heads=n_kv, head_dim=d_head, rope_theta=base,
        max_position_embeddings=2048, tie_word_embeddings=tied, attn_implementation="sdpa",
    )  # fmt: skip
    with torch.device(device):
        hf = LlamaForCausalLM(hf_cfg).to(dtype=dtype).eval()
    return ours, hf


def embedded_models(device: str, dtype: torch.dtype):
    from transformers import AutoModelForCausalLM

    from interp_heads.models.load import embedded_gguf_path, load_model

    ours = load_model("smollm2-135m", device=device, dtype=dtype)
    g = embedded_gguf_path()
    hf = (
        AutoModelForCausalLM.from_pretrained(g.parent, gguf_file=g.name, dtype=dtype)
        .to(device)
        .eval()
    )
    return ours, hf


def prompts(tokenizer, n: int, target: int = 40) -> list[str]:
    out = []
    for i in range(n):
        text = f"Item {i}: " + " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(60))
        ids = tokenizer(text, add_special_tokens=False)["input_ids"][: target - (i % 5)]
        out.append(tokenizer.decode(ids))
    return out


def sweep_inputs(model, n_examples: int, n_conditions: int):
    from interp_heads.heads import all_heads
    from interp_heads.tasks.schema import Example, Task

    ps = prompts(model.tokenizer, n_examples)
    task = Task(
        "bench",
        [
            Example(id=str(i), task="bench", prompt=p, question=p, answer="x")
            for i, p in enumerate(ps)
        ],
    )
    ranking = all_heads(model.cfg.n_layers, model.cfg.n_heads)
    seeds = max(1, n_conditions - 2)  # baseline + TopK + seeds x RandomK at one k
    k = max(1, model.cfg.n_layers * model.cfg.n_heads // 8)
    return task, ranking, seeds, k, ps


def time_sweep(model, task, ranking, cfg, batch_size, pack_rows) -> tuple[float, object]:
    from interp_heads.metrics import Accuracy
    from interp_heads.sweep.loop import SweepWarning, run_sweep

    _sync(model.cfg.device)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SweepWarning)
        res = run_sweep(model, {task.name: task}, {task.name: ranking}, cfg, [Accuracy()],
                        batch_size=batch_size, progress=False, pack_rows=pack_rows)  # fmt: skip
    _sync(model.cfg.device)
    return time.perf_counter() - t, res


def time_generation(model, jobs, batch_size, pack_rows, new_tokens) -> tuple[float, float, bool]:
    """Generation only (no sweep bookkeeping), every new token forced as for HF: (alone, packed, equal)."""
    from interp_heads.execution.packed import generate_packed
    from interp_heads.generation.decode import generate
    from interp_heads.interventions.masks import mask_heads

    kw = dict(stop_at_eos=False)
    _sync(model.cfg.device)
    t = time.perf_counter()
    alone = []
    for job in jobs:
        with mask_heads(model, job.heads, "mean", values=job.values, warn_if_idle=False):
            alone.append(generate(model, job.prompts, new_tokens, batch_size=batch_size, **kw))
    _sync(model.cfg.device)
    t_alone = time.perf_counter() - t
    t = time.perf_counter()
    packed = generate_packed(model, jobs, "mean", new_tokens, pack_rows=pack_rows, **kw)
    _sync(model.cfg.device)
    return t_alone, time.perf_counter() - t, packed == alone


def time_hf(hf, model, ps, batch_size, new_tokens) -> float:
    from interp_heads.generation.decode import tokenize_left_padded

    order = sorted(range(len(ps)), key=lambda i: len(ps[i]))
    _sync(model.cfg.device)
    t = time.perf_counter()
    for start in range(0, len(ps), batch_size):
        tokens, mask = tokenize_left_padded(
            model, [ps[i] for i in order[start : start + batch_size]]
        )
        dev = hf.device
        hf.generate(tokens.to(dev), attention_mask=mask.to(dev), max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                    do_sample=False, pad_token_id=0)  # fmt: skip
    _sync(model.cfg.device)
    return time.perf_counter() - t


def seed_figure_grid(model, n_examples: int | None = None):
    """``(task names, SweepConfig, examples per task, rows)`` of configs/seed_figure.toml."""
    import tomllib

    from interp_heads.sweep.loop import SweepConfig, plan_conditions

    conf = tomllib.loads(SEED_FIGURE_CONFIG.read_text())
    names = conf["tasks"]
    cfg = SweepConfig(ks=conf["ks"], selections=conf["selections"], seeds=conf["seeds"],
                      ablation=conf.get("ablation", "mean"), max_new_tokens=conf["max_new_tokens"])  # fmt: skip
    n = n_examples or conf["n_eval"]
    heads = [(layer, h) for layer in range(model.cfg.n_layers) for h in range(model.cfg.n_heads)]
    n_cond = len(plan_conditions(cfg, heads, model.cfg.n_layers, model.cfg.n_heads, "x"))
    return names, cfg, n, len(names) * n_cond * n


def seed_figure_sweep(model, batch_size, pack_rows, n_examples: int | None) -> tuple[float, int]:
    """Wall time of the Cognitive Mirrors figure grid on the built-in tasks (head ranking: a fixed order)."""
    from interp_heads.metrics import Accuracy
    from interp_heads.sweep.loop import SweepWarning, run_sweep
    from interp_heads.tasks import load_task
    from interp_heads.tasks.schema import Task

    names, cfg, n, _ = seed_figure_grid(model, n_examples)
    tasks = {}
    for name in names:
        task = load_task(name)
        tasks[name] = Task(name, list(task)[:n], meta=dict(task.meta))
    heads = [(layer, h) for layer in range(model.cfg.n_layers) for h in range(model.cfg.n_heads)]
    _sync(model.cfg.device)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SweepWarning)
        res = run_sweep(model, tasks, dict.fromkeys(names, heads), cfg, [Accuracy()], batch_size=batch_size,
                        progress=False, pack_rows=pack_rows)  # fmt: skip
    _sync(model.cfg.device)
    return time.perf_counter() - t, len(res.generations)


def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def bench_model(name, model, hf, args, out):
    from interp_heads.sweep.loop import SweepConfig

    task, ranking, seeds, k, ps = sweep_inputs(model, args.examples, args.conditions)
    cfg = SweepConfig(ks=[k], selections=["topk", "randomk"], seeds=seeds, ablation="mean",
                      max_new_tokens=args.new_tokens, fmt="plain")  # fmt: skip
    n_cond = 2 + seeds
    rows = n_cond * len(ps)
    pack = (
        args.pack_rows if args.pack_rows else ("auto" if args.device == "cuda" else args.batch_size)
    )
    time_sweep(
        model,
        task,
        ranking,
        SweepConfig(ks=[k], seeds=1, max_new_tokens=2, fmt="plain"),
        args.batch_size,
        0,
    )  # warm up
    from interp_heads.execution.packed import PackedJob, resolve_pack_rows
    from interp_heads.interventions.means import head_means
    from interp_heads.sweep.loop import plan_conditions

    res = {"conditions": n_cond, "examples": len(ps), "rows": rows, "new_tokens": args.new_tokens}
    means = head_means(model, ps, batch_size=args.batch_size)
    plan = plan_conditions(cfg, ranking, model.cfg.n_layers, model.cfg.n_heads, task.name)
    jobs = [PackedJob(ps, list(heads), means) for _, _, _, heads in plan]
    gen_rows = resolve_pack_rows(pack, model, args.batch_size, ps, args.new_tokens)
    res["pack_rows"] = gen_rows
    times = {
        "unbatched": [],
        "packed": [],
        "generate_unbatched": [],
        "generate_packed": [],
        "hf_generate": [],
    }
    if (
        gen_rows != args.batch_size
    ):  # HF at the packed batch size too (batch 32 vs e.g. 2048 on a GPU)
        times["hf_generate_at_pack_rows"] = []
    gens = {}
    same_gen = True
    for _ in range(args.repeats):  # interleaved so all see the same machine load
        t, r = time_sweep(model, task, ranking, cfg, args.batch_size, 0)
        times["unbatched"].append(t)
        gens["unbatched"] = r.generations.generation.tolist()
        t, r = time_sweep(model, task, ranking, cfg, args.batch_size, pack)
        times["packed"].append(t)
        gens["packed"] = r.generations.generation.tolist()
        t_alone, t_packed, same = time_generation(
            model, jobs, args.batch_size, gen_rows, args.new_tokens
        )
        times["generate_unbatched"].append(t_alone)
        times["generate_packed"].append(t_packed)
        same_gen = same_gen and same
        times["hf_generate"].append(
            time_hf(hf, model, ps * n_cond, args.batch_size, args.new_tokens)
        )
        if "hf_generate_at_pack_rows" in times:
            t = time_hf(hf, model, ps * n_cond, gen_rows, args.new_tokens)
            times["hf_generate_at_pack_rows"].append(t)
    med = {key: statistics.median(v) for key, v in times.items()}
    res["examples_per_s"] = {key: rows / v for key, v in med.items()}
    res["ratio_vs_hf"] = {key: med["hf_generate"] / v for key, v in med.items()}
    res["packed_equals_unbatched"] = gens["packed"] == gens["unbatched"] and same_gen
    res["median_s"], res["all_s"] = med, times
    out[name] = res
    line = "  ".join(
        f"{key} {v:7.1f} ex/s ({res['ratio_vs_hf'][key]:.2f}x HF)"
        for key, v in res["examples_per_s"].items()
    )
    print(f"{name:22s} {line}  packed==unbatched: {res['packed_equals_unbatched']}", flush=True)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--shape", default="smollm2", choices=sorted(SHAPES))
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--examples", type=int, default=32)
    ap.add_argument("--conditions", type=int, default=4)
    ap.add_argument("--new-tokens", type=int, default=6)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument(
        "--pack-rows", type=int, default=None, help="default: auto on CUDA, --batch-size elsewhere"
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--seed-figure",
        action="store_true",
        help="time the full Cognitive Mirrors figure sweep (18,000 rows)",
    )
    ap.add_argument(
        "--seed-figure-examples", type=int, default=None, help="default: n_eval of the config"
    )
    ap.add_argument("--skip-embedded", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    torch.set_grad_enabled(False)
    dtype = getattr(torch, args.dtype)
    out: dict = {"args": vars(args), "machine": platform.platform(), "torch": torch.__version__,
                 "threads": torch.get_num_threads()}  # fmt: skip
    if torch.device(args.device).type == "cuda":
        out["gpu"] = torch.cuda.get_device_name()
    emb = None
    if not args.skip_embedded:
        emb, emb_hf = embedded_models(args.device, dtype)
    tok = emb.tokenizer if emb is not None else embedded_tokenizer()
    model, hf = random_models(args.shape, args.device, dtype, tok)
    res = bench_model(f"random {args.shape}", model, hf, args, out)
    _, _, _, rows = seed_figure_grid(emb if emb is not None else model, args.seed_figure_examples)
    del model, hf
    if emb is not None:
        res = bench_model("embedded smollm2-135m", emb, emb_hf, args, out)
    if emb is not None and args.seed_figure:
        pack = (
            args.pack_rows
            if args.pack_rows
            else ("auto" if args.device == "cuda" else args.batch_size)
        )
        secs, n = seed_figure_sweep(emb, args.batch_size, pack, args.seed_figure_examples)
        out["seed_figure_sweep"] = {"seconds": secs, "rows": n, "measured": True}
    elif emb is not None or args.shape == "smollm2":
        est = rows / res["examples_per_s"]["packed"]
        which = "embedded model" if emb is not None else "random model of the same shape"
        out["seed_figure_sweep"] = {"seconds": est, "rows": rows, "measured": False,
                                    "note": f"estimated from the packed sweep rate of the {which}"}  # fmt: skip
    if "seed_figure_sweep" in out:
        s = out["seed_figure_sweep"]
        print(
            f"Cognitive Mirrors figure sweep ({s['rows']} rows): {s['seconds']:.1f} s {'measured' if s['measured'] else 'estimated'}"
        )
    path = Path(args.out) if args.out else result_path(f"sweep_{args.device}_{args.shape}.json")
    path.write_text(json.dumps(out, indent=1))


def embedded_tokenizer():
    from interp_heads.models.load import load_model

    return load_model("smollm2-135m", device="cpu").tokenizer


if __name__ == "__main__":
    main()
