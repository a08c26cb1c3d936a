"""Test support on the tiny random model (``models.tiny``): example tasks, TransformerLens'
own patching as a reference, the packed == plain check, golden run outputs."""

from __future__ import annotations

from interp_heads.models.tiny import SPECIALS, byte_tokenizer, tiny_config, tiny_model  # noqa: F401
from interp_heads.tasks.schema import Example

# Short prompts of every task type, of different lengths (left padding is exercised).
MIXED_PROMPTS = [
    "What is the capital of France?",
    "What is 7 + 5?",
    "Tom is taller than Ann. Ann is taller than Bob. Who is the shortest?",
    "Which language is spoken in Brazil?",
    "The key 'apple' maps to 4 and 'pear' maps to 9. What does 'pear' map to?",
    "Name a colour of the sky.",
    "Complete: one, two, three,",
    "Who wrote Hamlet?",
]

# Byte tokenizer: prompts end with a space so that answers start with a letter byte.
PATCHING_EXAMPLES = [
    Example(
        "fr",
        "t",
        "The capital of France is ",
        "P",
        corrupted_prompt="The capital of Italy  is ",
        corrupted_answer="R",
    ),
    Example(
        "cat",
        "t",
        "Bob gave the cat to the ",
        "A",
        corrupted_prompt="Bob gave the dog to the ",
        corrupted_answer="B",
    ),
    Example(
        "sun",
        "t",
        "Sun rises in the ",
        "E",
        corrupted_prompt="Sun sets in the  ",
        corrupted_answer="W",
    ),
]


def tl_head_patching(model, task):
    """TransformerLens' own head patching with the same normalised logit-difference metric."""
    from transformer_lens import patching

    from interp_heads.attribution.inputs import logit_diff, make_batches

    (b,) = make_batches(model, task, batch_size=len(task))
    assert bool(b.mask.all()), "the reference needs prompts of one length"
    clean_logits, cache = model.run_with_cache(b.clean)
    corr_logits = model(b.corrupted)
    ld_clean = logit_diff(clean_logits[:, -1], b).mean()
    ld_corr = logit_diff(corr_logits[:, -1], b).mean()

    def metric(logits):
        return (logit_diff(logits[:, -1], b).mean() - ld_corr) / (ld_clean - ld_corr)

    return patching.get_act_patch_attn_head_out_all_pos(model, b.corrupted, cache, metric).cpu()


def assert_packed_equals_plain(model, prompts: list[str], n_new: int) -> None:
    """Two conditions packed into one generation equal each masked and generated on its own."""
    from interp_heads.execution.packed import PackedJob, generate_packed
    from interp_heads.generation.decode import generate_tokens
    from interp_heads.interventions.masks import mask_heads
    from interp_heads.interventions.means import head_means

    means = head_means(model, prompts)
    jobs = [
        PackedJob(prompts, [(0, 0), (1, 3)], means),
        PackedJob(prompts[:2], [(1, 1)], means),
    ]
    packed = generate_packed(model, jobs, "mean", n_new, pack_rows=3, stop_at_eos=False)
    for job, got in zip(jobs, packed, strict=True):
        with mask_heads(model, job.heads, "mean", values=means):
            want = generate_tokens(model, job.prompts, n_new, stop_at_eos=False)
        assert got == [model.tokenizer.decode(r, skip_special_tokens=True) for r in want]


# --------------------------------------------------------------------------- golden outputs
# golden name -> the run folder's table (``store.folder.RunFolder``)
GOLDEN_FILES = {
    "sweep.csv": "sweep_parquet",
    "summary.csv": "summary_csv",
    "ranking.csv": "ranking_csv",
    "significance.csv": "significance_csv",
    "baseline.csv": "baseline_csv",
}


def save_golden(run_dir, golden_dir) -> None:
    """Store a run's result tables (and generations) as the "before" outputs of a golden test."""
    from pathlib import Path

    import pandas as pd

    from interp_heads.store.atomic import write_atomic
    from interp_heads.store.files import read_plain
    from interp_heads.store.folder import RunFolder

    run, golden_dir = RunFolder(run_dir), Path(golden_dir)
    golden_dir.mkdir(parents=True, exist_ok=True)
    sweep = pd.read_parquet(run.sweep_parquet).to_csv(index=False)
    write_atomic(golden_dir / "sweep.csv", sweep)
    for name, attr in GOLDEN_FILES.items():  # copies: read as plain files, written atomically
        if name != "sweep.csv":
            write_atomic(golden_dir / name, read_plain(getattr(run, attr)))
    write_atomic(golden_dir / "generations.jsonl", read_plain(run.generations))


FAMILY_COLUMNS = ("p_holm",)  # depend on the whole table's rows, not on one task's


def assert_matches_golden(
    run_dir, golden_dir, rtol: float = 1e-5, atol: float = 1e-5, tasks=None
) -> None:
    """Assert that a run folder's tables and generations equal the stored golden ones.

    Strings, integers, orderings and generations must be identical; floats may differ by ``rtol``
    or ``atol``, also inside list-valued cells (``draw_means``): float32 reductions change with the
    number of threads, the CPU's vector instructions and the backend (SmolLM2's ranking scores
    moved by up to ~3e-6 absolute between two x86 machines, and by 4e-6 on the bridge backend;
    ranks, orders and generations identical). ``tasks``: compare only these tasks' rows (a run of
    some of the golden run's tasks). Regenerate with :func:`save_golden` only for an intended
    change of results, and say so in the commit.
    """
    import io
    import json
    from pathlib import Path

    import pandas as pd

    from interp_heads.store.folder import RunFolder

    run, golden_dir = RunFolder(run_dir), Path(golden_dir)
    got_tables = {
        name: pd.read_parquet(run.sweep_parquet)
        if name == "sweep.csv"
        else pd.read_csv(getattr(run, attr))
        for name, attr in GOLDEN_FILES.items()
    }
    for name, got in got_tables.items():
        want = pd.read_csv(golden_dir / name)
        got = pd.read_csv(io.StringIO(got.to_csv(index=False)))  # same dtypes
        assert list(got.columns) == list(want.columns), f"{name}: columns differ"
        if tasks is not None and "task" in want.columns:
            want = want[want["task"].isin(list(tasks))]
            # Holm's adjustment is over every row of the table: a run of some tasks has a
            # smaller family, so its adjusted p cannot equal the whole run's
            family = [c for c in FAMILY_COLUMNS if c in want.columns]
            got, want = got.drop(columns=family), want.drop(columns=family)
        _assert_table_close(
            got.reset_index(drop=True), want.reset_index(drop=True), rtol, atol, name
        )

    def gens(path):
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        rows = [r for r in rows if tasks is None or r["task"] in tasks]
        # a null cell is an absent one: another task's columns (retrieval's depth...) are null here
        rows = [{k: v for k, v in r.items() if v is not None} for r in rows]
        return sorted(json.dumps(r, sort_keys=True) for r in rows)

    assert gens(run.generations) == gens(golden_dir / "generations.jsonl"), (
        "generations differ from the golden run"
    )


def _assert_table_close(got, want, rtol: float, atol: float, name: str) -> None:
    """``assert_frame_equal`` with float tolerance; list-valued cells ("[0.1, 0.2]") elementwise."""
    import json

    import numpy as np
    from pandas.testing import assert_frame_equal

    assert len(got) == len(want), f"{name}: {len(got)} rows, golden {len(want)}"
    listed = [
        c
        for c in want.columns
        if len(want) and want[c].map(lambda v: isinstance(v, str) and v.startswith("[")).all()
    ]
    for c in listed:
        for i, (g, w) in enumerate(zip(got[c], want[c], strict=True)):
            g, w = json.loads(g), json.loads(w)
            assert len(g) == len(w) and np.allclose(g, w, rtol=rtol, atol=atol), (
                f"{name} {c} row {i}"
            )
    assert_frame_equal(
        got.drop(columns=listed), want.drop(columns=listed), check_exact=False, rtol=rtol,
        atol=atol, obj=name,
    )  # fmt: skip
