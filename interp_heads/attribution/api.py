"""``attribute_heads``: rank every attention head by how much a task depends on it.

The method is an object of the registry ``attribution.methods.METHODS``; this module only
resolves it, checks its options (``methods.check_method``), builds the batches, runs the
method, re-scores the top heads exactly when asked (``refine``) and records the provenance.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import time

import torch

from interp_heads.attribution.inputs import make_batches
from interp_heads.attribution.memory import gradient_rows
from interp_heads.attribution.methods import METHODS, Method, Options, check_method, resolve
from interp_heads.attribution.patching import exact_scores, mean_ablation_scores
from interp_heads.attribution.scores import HeadScores
from interp_heads.attribution.verify import verify_ranking
from interp_heads.errors import InputError
from interp_heads.generation.checks import positive_int
from interp_heads.model_info import source_of
from interp_heads.models.tl_compat import HookedTransformer
from interp_heads.store.provenance import versions
from interp_heads.tasks.prompt_format import check_same_format, task_format
from interp_heads.tasks.schema import Example, Task

EXACT_TARGET = (
    "normalised logit diff (clean=1, corrupted=0) after patching the clean head into the "
    "corrupted run"
)


def default_method(task: Task) -> str:
    """``atp`` when the task has corrupted prompts, else ``ablation_atp`` (no corrupted prompts)."""
    return resolve("auto", task.has_corrupted).name


def attribute_heads(
    model: HookedTransformer,
    task: Task | list[Example],
    method: str = "auto",
    *,
    n_examples: int | None = None,
    batch_size: int = 8,
    batch_padding: int | None = None,
    refine: int | None = None,
    fmt: str | None = None,
    verify: int | None = None,
    progress: bool = False,
    **options,
) -> HeadScores:
    """Score every head ``(layer, head)`` of ``model`` on ``task`` (all methods act on ``hook_z``).

    Args:
        model: a HookedTransformer (grouped-query attention is fine: ``hook_z`` is per query head).
        task: the task (or a list of its examples); ``exact``, ``atp`` and ``refine`` (of
            those) need corrupted prompts.
        method: a name in ``attribution.methods.METHODS``: ``exact`` (activation patching,
            clean -> corrupted), ``atp`` (attribution patching), ``ablation_atp`` (attribution
            patching against the ablation baseline, clean only: estimates the sweep's own
            intervention), ``ablation_ig``, ``gradxact`` (grad x activation), ``headmask``
            (Michel et al. 2019), ``mean_ablation`` (exact effect of replacing a head by its
            task mean), ``retrieval_score`` (Wu et al. 2024, needle tasks) or ``auto`` (the
            default: ``atp`` when the task has corrupted prompts, else ``ablation_atp``).
        n_examples: use the task's first ``n`` examples (default all).
        batch_size: examples per forward pass.
        batch_padding: also cut a batch (of examples sorted by length) before its padding would
            pass this many positions (None: no limit), as a sweep's ``batch_padding`` does: long
            and short prompts are not all padded to the longest.
        refine: re-score the top ``refine`` heads exactly (``exact`` patching, or exact
            ``mean_ablation`` on the same log-prob scale for the methods that estimate it);
            those heads rank first, the others keep their cheap scores and order below them.
        fmt: prompt format (``"auto"``, ``"chat"``, ``"plain"``), as in ``tasks.prompts.render``;
            None (default): the task's own format (``task.fmt``; built-in tasks are ``"plain"``;
            a file that declares none is measured once, as the command line does).
        verify: check the finished ranking's top ``verify`` heads and ``verify`` random others
            by their exact mean-ablation drop (``attribution.verify``), reusing the exact scores
            already made; the result is ``provenance["verification"]``.
        progress: show a progress bar: each pass over the examples' batches with its total,
            the model's forward passes so far beside it.
        options: the common fields of ``methods.Options``: ``ablation`` (the kind
            ``ablation_atp`` estimates), ``seed`` (its resample partners), ``max_rows`` (heads x
            examples per patched forward pass), and the method's own (its ``Options`` class:
            ``ablation_atp``'s ``exact_layers``, ``rivals``, ``lookahead``; ``ablation_ig``'s
            ``steps``).

    Returns:
        HeadScores with ``provenance`` (model, examples, versions, seconds, date).
    """
    start = time.perf_counter()
    task = _checked_task(task)
    for name, value, least in (
        ("batch_size", batch_size, 1),
        ("n_examples", n_examples, 1),
        ("batch_padding", batch_padding, 0),
    ):
        if value is not None:
            positive_int(value, f"attribute_heads: {name}", least)
    with _progress(model, progress) as track:
        return _attribute(
            model, task, method, n_examples, batch_size, batch_padding, refine, fmt, verify,
            options, start, track,
        )  # fmt: skip


def _checked_task(task) -> Task:
    """A ``Task`` with examples (a list of ``Example`` objects is made one)."""
    if isinstance(task, list | tuple) and all(isinstance(e, Example) for e in task):
        task = Task(task[0].task if task else "examples", list(task))
    if not isinstance(task, Task):
        raise InputError(
            "attribute_heads: task must be a Task (interp_heads.load_task(...)) or a list of "
            f"Examples, got {type(task).__name__}"
        )
    if not len(task):
        raise InputError(f"attribute_heads: task {task.name!r} has no examples")
    return task


class _TrackedBatches(list):
    """The batches, each pass over them a progress bar with its total (``pass i: b/n batches``);
    the model's forward passes so far in the postfix (methods differ in how many they run)."""

    def __init__(self, batches, bar, forwards: list[int]):
        super().__init__(batches)
        self.bar, self.forwards, self.passes = bar, forwards, 0

    def __iter__(self):
        self.passes += 1
        self.bar.reset(total=len(self))
        self.bar.set_description(f"attribute_heads pass {self.passes}")
        for batch in super().__iter__():
            yield batch
            self.bar.set_postfix(forward=self.forwards[0], refresh=False)
            self.bar.update(1)


@contextlib.contextmanager
def _progress(model, enabled: bool):
    """Inside: a function that makes the batches report progress (a no-op when not ``enabled``)."""
    if not enabled:
        yield lambda batches: batches
        return
    from tqdm.auto import tqdm

    forwards = [0]

    def count(*_) -> None:  # a forward hook returning a value would replace the output
        forwards[0] += 1

    with tqdm(desc="attribute_heads", unit=" batch") as bar:
        handle = model.register_forward_hook(count)
        try:
            yield lambda batches: _TrackedBatches(batches, bar, forwards)
        finally:
            handle.remove()


def _attribute(
    model, task, method, n_examples, batch_size, batch_padding, refine, fmt, verify, options,
    start, track,
):  # fmt: skip
    """The body of :func:`attribute_heads`, its arguments checked."""
    fmt = task_format(model, task, fmt)
    check_same_format(model, task, fmt, where="attribute_heads")
    chosen = resolve(method, task.has_corrupted)
    if chosen.multi_task:
        raise InputError(
            f"method {chosen.name!r} ranks heads on several tasks together: use a run with two "
            f"or more tasks ({chosen.__module__})"
        )
    settings = {"refine": refine, "fmt": fmt, **options}
    opts = check_method(method, settings, has_corrupted=task.has_corrupted, model_cfg=model.cfg)
    batches = track(
        make_batches(
            model,
            task,
            n_examples=n_examples,
            batch_size=batch_size,
            fmt=fmt,
            corrupted=chosen.needs_corrupted(opts, task.has_corrupted),
            rows_for_width=gradient_rows(model, batch_size) if chosen.gradient else None,
            batch_padding=batch_padding,
        )
    )
    per: list[torch.Tensor] = []  # per-example scores [example layer head]: split-half stability
    scores, target = chosen.score(model, task, batches, opts, per)
    per_example = torch.cat(per)
    name, refined = chosen.name, None
    if refine is not None and chosen.name != "exact":
        name, target, refined = _refine(model, batches, chosen, opts, scores, per_example, target)
    prov = _provenance(model, batches, chosen, opts, per_example, batch_size)
    if batch_padding is not None:
        prov["batch_padding"] = batch_padding
    _note_memory_cap(batches, prov)
    out = HeadScores(scores, name, task.name, target, prov, refined)
    if verify:
        out.provenance["verification"] = verify_ranking(
            model, batches, out, verify, max_rows=opts.max_rows
        )
    out.provenance["seconds"] = round(time.perf_counter() - start, 3)
    out.provenance["date"] = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    return out


def _refine(model, batches, method: Method, opts: Options, scores, per_example, target):
    """Re-score the top ``opts.refine`` heads exactly, in place; ``(name, target, refined mask)``."""
    cheap = HeadScores(scores, method.name, "")
    heads = cheap.top(opts.refine, "signed" if method.signed else "abs")
    refined = torch.zeros_like(scores, dtype=torch.bool)
    for layer, head in heads:
        refined[layer, head] = True
    done = method.exact_layers(opts)
    todo = [(layer, h) for layer, h in heads if layer >= done]  # the others: exact already
    mean = method.refine_with == "mean_ablation"
    if todo:
        sub: list[torch.Tensor] = []
        if mean:
            exact, _ = mean_ablation_scores(
                model,
                batches,
                heads=todo,
                max_rows=opts.max_rows,
                objective="logprob",
                per_example=sub,
            )
        else:
            exact = exact_scores(
                model, batches, heads=todo, max_rows=opts.max_rows, per_example=sub
            )
        exact_per = torch.cat(sub)
        for layer, head in todo:
            scores[layer, head] = exact[layer, head]
            per_example[:, layer, head] = exact_per[:, layer, head]
    if mean:
        return (
            f"{method.name}+mean_ablation@{opts.refine}",
            f"top {opts.refine}: exact answer log-prob drop under mean ablation; others: {target}",
            refined,
        )
    return (
        f"{method.name}+exact@{opts.refine}",
        f"top {opts.refine}: {EXACT_TARGET}; others: {target}",
        refined,
    )


def _note_memory_cap(batches, prov: dict) -> None:
    """Record each batch's examples (``memory_capped_rows``) when the free memory cut the
    gradient batches (``make_batches`` warns)."""
    if any(b.memory_capped for b in batches):
        prov["memory_capped_rows"] = [len(b) for b in batches]


def _provenance(model, batches, method: Method, opts: Options, per_example, batch_size) -> dict:
    from interp_heads.attribution.stability import interval_record, split_record

    ids = [i for b in batches for i in b.ids]
    mean_refined = method.refine_with == "mean_ablation"
    prov = {
        "model": source_of(model),
        "n_layers": model.cfg.n_layers,
        "n_heads": model.cfg.n_heads,
        "n_examples": len(ids),
        "example_ids": ids,
        "batch_size": batch_size,
        "fmt": opts.fmt,
        "refine": opts.refine,
        "ablation": opts.ablation if mean_refined else None,
        "exact_layers": method.exact_layers(opts),
        "rank_by": "signed" if method.signed else "abs",
        "versions": _versions(),
        "split_half": split_record(per_example),
        "interval": interval_record(per_example),  # each head's 95% interval (head explorer)
    }
    own = [f.name for f in METHODS.own_options(type(method)) if f.name != "exact_layers"]
    prov.update({k: getattr(opts, k) for k in own if getattr(opts, k)})  # steps; rivals, lookahead
    return prov


def _versions() -> dict[str, str]:
    found = versions(("interp_heads", "torch", "transformer-lens", "transformers"))
    return {pkg: "unknown" if v == "absent" else v for pkg, v in found.items()}
