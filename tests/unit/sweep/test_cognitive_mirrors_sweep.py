"""A sweep in the cognitive_mirrors format: the ``]`` stop, whole texts, the unmasked generations.

The study's template is longer than the tiny model's context (128 bytes), so these tests keep the
task text unwrapped (``wrap`` patched to the identity) and make the stop token one the tiny model
generates; everything else is the format's own path through the sweep.
"""

from __future__ import annotations

import warnings

import pytest

from interp_heads.errors import InputError
from interp_heads.generation.decode import generate, generate_tokens
from interp_heads.metrics import Metric, MetricItem
from interp_heads.metrics.cognitive_mirrors import CognitiveMirrorsAccuracy
from interp_heads.metrics.overlap import corpus_bleu
from interp_heads.sweep.loop import SweepConfig, run_sweep
from interp_heads.tasks.schema import Example, Task

PROMPTS = ["The capital of France is", "Q: 2 + 2\nA:", "red green blue", "one two"]


class _Seen(Metric):
    """Records the items it is given (a metric that asks for the unmasked generations)."""

    name, label, needs_unmasked = "seen", "Seen", True

    def __init__(self):
        self.items = []

    def score(self, items):
        self.items += items
        return [0.0] * len(items)


def _task(fmt: str = "cognitive_mirrors", name: str = "t") -> Task:
    exs = [Example(id=str(i), task=name, prompt=p, answer="Paris") for i, p in enumerate(PROMPTS)]
    return Task(name, exs, meta={"fmt": fmt, "fmt_source": "file"})


@pytest.fixture
def study_format(monkeypatch, tiny):
    """Short prompts kept as they are, and a stop token the tiny model emits in one answer."""
    import interp_heads.sweep.config as sweep_config
    from interp_heads.tasks import cognitive_mirrors

    monkeypatch.setattr(cognitive_mirrors, "wrap", lambda text: text)
    (row,) = generate_tokens(tiny, PROMPTS[:1], 10)
    stop = tiny.tokenizer.convert_ids_to_tokens(row[5])
    monkeypatch.setattr(sweep_config, "STOP_TOKEN", stop)
    return stop


def test_sweep_stops_after_the_token_and_scores_whole_texts(tiny, study_format, tmp_path):
    cfg = SweepConfig(
        ks=[2], selections=["topk"], seeds=1, ablation="zero", max_new_tokens=10,
        fmt="cognitive_mirrors", free_form=True,
    )  # fmt: skip
    assert cfg.generation(4).key()["stop_after"] == study_format
    assert cfg.generation(4).stop_at_newline is False
    metric, seen = CognitiveMirrorsAccuracy(cosine=1.0), _Seen()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_sweep(
            tiny, [_task()], {"t": [(0, 0), (1, 1)]}, cfg, metrics=[metric, seen],
            batch_size=4, out_dir=tmp_path, progress=False,
        )  # fmt: skip
    gens = res.generations.set_index(["selection", "example_id"]).generation
    want = generate(tiny, PROMPTS, 10, batch_size=4, stop_after=study_format)
    base = [gens[("baseline", str(i))] for i in range(len(PROMPTS))]
    assert base == want  # stopped after the token
    assert any("\t" in g for g in base)  # so whitespace joining would show:
    assert {it.mt for it in seen.items} >= set(base)  # the metrics see whole texts as generated
    assert {it.unmasked for it in seen.items} == set(base)
    assert len(base[0]) < len(generate(tiny, PROMPTS[:1], 10)[0])  # the first one did stop
    rec = res.records[res.records.metric == metric.name].sort_values("example_id")
    vals = rec[rec.selection == "baseline"].value
    # the unmasked condition against itself: BLEU of each whole text with itself decides
    assert vals.tolist() == [float(corpus_bleu([g], [g]) > 0.8) for g in base]
    topk = [gens[("TopK", str(i))] for i in range(len(PROMPTS))]
    items = [
        MetricItem(src="", mt=t, ref="Paris", unmasked=b) for t, b in zip(topk, base, strict=True)
    ]
    got = rec[rec.selection == "TopK"].value
    assert got.tolist() == metric.score(items)  # scored against the unmasked generations


def test_a_study_format_task_needs_the_sweep_format(tiny):
    cfg = SweepConfig(ks=[2], selections=["topk"], seeds=1, max_new_tokens=4)
    tasks = [_task(), _task("plain", "p")]
    with pytest.raises(InputError, match="cognitive_mirrors format"):
        run_sweep(
            tiny, tasks, {"t": [(0, 0)], "p": [(0, 0)]}, cfg,
            metrics=[CognitiveMirrorsAccuracy(cosine=1.0)], progress=False,
        )  # fmt: skip


def test_the_unmasked_answers_and_the_masked_conditions_read_one_prompt_pass(
    tiny, study_format, tmp_path
):
    """At the generated positions the prompt's pass is unmasked: the unmasked reference answers
    and every masked condition start from one pass per batch, and the answers are those of
    whole-prompt generation."""
    from interp_heads.generation.prefix import release_prefixes

    cfg = SweepConfig(
        ks=[2], selections=["topk", "randomk"], seeds=1, ablation="zero", max_new_tokens=10,
        fmt="cognitive_mirrors", free_form=True, positions="generated",
    )  # fmt: skip
    widths, block = [], tiny.blocks[0]
    forward = block.forward
    monkey = lambda resid, *a, **k: widths.append(resid.shape[1]) or forward(resid, *a, **k)  # noqa: E731
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("ignore")
        mp.setattr(block, "forward", monkey)
        mp.setattr("interp_heads.sweep.loop.check_mask_effect", lambda *a, **k: None)
        res = run_sweep(
            tiny, [_task()], {"t": [(0, 0), (1, 1)]}, cfg, metrics=[CognitiveMirrorsAccuracy(cosine=1.0)],
            batch_size=4, out_dir=tmp_path, progress=False,
        )  # fmt: skip
    release_prefixes(tiny)
    assert sum(w > 1 for w in widths) == 1  # one batch of 4 prompts: one pass over them,
    # for the unmasked answers, the unmasked condition and the masked ones
    assert len(widths) > 10  # the conditions' decode steps ran
    gens = res.generations.set_index(["selection", "example_id"]).generation
    base = [gens[("baseline", str(i))] for i in range(len(PROMPTS))]
    assert base == generate(tiny, PROMPTS, 10, batch_size=4, stop_after=study_format)
