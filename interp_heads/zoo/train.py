"""Train a zoo model from its recipe (AdamW, fixed seed), cache it, and refuse it as ground truth
below its accuracy bar.

A :class:`Recipe` fixes everything training depends on; its digest (with the library versions,
``models.cache.entry_dir``) keys the cache entry, which holds the weights with their SHA-256, the
tokenizer, the config and ``meta.json`` (recipe, held-out accuracy, training seconds). The
training pool and the held-out prompts are drawn from different seeds, and a held-out prompt that
also occurs in the pool is dropped, so the accuracy is on prompts never trained on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass

import torch

from interp_heads.errors import PipelineError
from interp_heads.zoo.tasks import as_task, drills, items

FORMAT = 1  # bump when training changes in a way the recipe does not show
LATER_FIELDS = {"drills": (), "positional": "standard"}  # Recipe fields added after FORMAT 1
HELD_OUT_SEED = 10_000  # the held-out prompts' seed offset (the pool uses the recipe's seed)


@dataclass(frozen=True)
class Recipe:
    """A zoo model: its task, shape (attention-only, LayerNorm, learned positions) and training."""

    name: str
    task: str
    n_layers: int = 2
    n_heads: int = 4
    d_model: int = 64
    d_head: int = 16
    steps: int = 2000
    batch: int = 128
    lr: float = 3e-3
    weight_decay: float = 0.01
    n_pool: int = 20_000
    n_held_out: int = 512
    seed: int = 0
    bar: float = 0.99
    drills: tuple[str, ...] = ()  # ``zoo.tasks.DRILLS`` whose dense loss is added in training
    # TransformerLens' positional_embedding_type; "shortformer" adds the positions to every
    # layer's queries and keys only, so no value (and no head's output) carries a position
    positional: str = "standard"

    @property
    def n_total(self) -> int:
        return self.n_layers * self.n_heads

    def digest(self) -> str:
        """SHA-256 of the recipe and :data:`FORMAT` (what the cache entry is keyed by)."""
        recipe = dataclasses.asdict(self)
        # fields added later leave the digest at their default: older recipes keep their entry
        for name, default in LATER_FIELDS.items():
            if recipe[name] == default:
                del recipe[name]
        blob = json.dumps({"recipe": recipe, "fmt": FORMAT}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class ZooModel:
    """A trained zoo model: ``accuracy`` on ``held_out`` (a toolkit ``Task``), the seconds its
    training took (as recorded when it was trained) and the weights' SHA-256."""

    recipe: Recipe
    model: object
    accuracy: float
    train_seconds: float
    weights_sha256: str
    cached: bool

    def require_truth(self) -> ZooModel:
        """Itself, or PipelineError when it misses its accuracy bar (it cannot be ground truth)."""
        if not self.accuracy >= self.recipe.bar:
            raise PipelineError(
                f"zoo model {self.recipe.name} reaches {self.accuracy:.3f} held-out accuracy, "
                f"below its bar {self.recipe.bar}: refused as ground truth"
            )
        return self

    def held_out(self, n: int | None = None, seed: int = 0):
        """``n`` held-out prompts as a ``Task`` (``seed`` picks another held-out draw)."""
        return held_out_task(self.recipe, n or self.recipe.n_held_out, seed)

    def manifest(self) -> dict:
        return {
            "recipe": dataclasses.asdict(self.recipe), "recipe_sha256": self.recipe.digest(),
            "weights_sha256": self.weights_sha256, "held_out_accuracy": self.accuracy,
            "train_seconds": self.train_seconds,
        }  # fmt: skip


def new_model(recipe: Recipe):
    """The recipe's untrained HookedTransformer with the byte tokenizer (seeded)."""
    from interp_heads.models.load import attach_tokenizer
    from interp_heads.models.tiny import SPECIALS, byte_tokenizer
    from interp_heads.models.tl_compat import HookedTransformer, HookedTransformerConfig

    cfg = HookedTransformerConfig(
        n_layers=recipe.n_layers, d_model=recipe.d_model, n_heads=recipe.n_heads,
        d_head=recipe.d_head, n_ctx=16, d_vocab=len(SPECIALS) + 256, attn_only=True,
        normalization_type="LN", positional_embedding_type=recipe.positional, act_fn="relu",
        default_prepend_bos=False, seed=recipe.seed, device="cpu",
    )  # fmt: skip
    torch.manual_seed(recipe.seed)
    return attach_tokenizer(HookedTransformer(cfg).eval(), byte_tokenizer())


def token_ids(model, texts: list[str]) -> torch.Tensor:
    """Token ids ``[n, pos]`` of same-length prompts, as the toolkit tokenizes them: one byte
    token per character, read from a table of each character's own token (the tokenizer called
    once per character, not per prompt), checked against the toolkit's tokenization of the
    first prompts."""
    from interp_heads.generation.decode import tokenize_left_padded

    table = {c: int(model.to_tokens(c, prepend_bos=False)[0, 0]) for c in set("".join(texts))}
    tokens = torch.tensor([[table[c] for c in t] for t in texts])
    want, mask = tokenize_left_padded(model, texts[:16])
    if not bool(mask.all()) or not torch.equal(want, tokens[:16]):
        raise PipelineError("zoo prompts must be one byte token per character, of one length")
    return tokens


def _answer_ids(model, answers: list[str]) -> torch.Tensor:
    from interp_heads.attribution.inputs import answer_token

    return torch.tensor([answer_token(model, a, chat=False, prompt=" ") for a in answers])


def held_out_task(recipe: Recipe, n: int, seed: int = 0):
    """``n`` held-out prompts of the recipe's task, none of them in its training pool."""
    pool = {r.prompt for r in items(recipe.task, recipe.n_pool, recipe.seed)}
    rows = [r for r in items(recipe.task, 2 * n + 64, HELD_OUT_SEED + recipe.seed + seed)
            if r.prompt not in pool][:n]  # fmt: skip
    return as_task(recipe.task, rows, prefix=f"h{seed}-")


def accuracy(model, task) -> float:
    """Share of the task's examples whose answer token is the argmax at the last position."""
    from interp_heads.attribution.inputs import make_batches

    hits, n = 0, 0
    with torch.no_grad():
        for b in make_batches(model, task, batch_size=256, fmt="plain", corrupted=False):
            logits = model(b.clean, attention_mask=b.mask)[:, -1]
            hits += int((logits.argmax(-1) == b.answer).sum())
            n += len(b)
    return hits / n


IGNORE = -100  # a drill position without a target (cross_entropy's ignore_index)


def _drill_batches(model, recipe: Recipe) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each of the recipe's drills as (token ids ``[n, pos]``, target ids ``[n, pos]``: the
    target token at each drill's own target positions, :data:`IGNORE` elsewhere), ``n_pool``
    of each drawn from the recipe's seed."""
    out = []
    for name in recipe.drills:
        rows = drills(name, recipe.n_pool, recipe.seed)
        tokens = token_ids(model, [r.text for r in rows])
        chars = sorted(set("".join(r.targets for r in rows)))
        ids = dict(zip(chars, _answer_ids(model, chars).tolist(), strict=True))
        targets = torch.full(tokens.shape, IGNORE)
        for i, r in enumerate(rows):
            targets[i, list(r.positions)] = torch.tensor([ids[c] for c in r.targets])
        out.append((tokens, targets))
    return out


def train(recipe: Recipe):
    """Train the recipe's model (AdamW, cross-entropy of the answer at the last position, plus
    each drill's cross-entropy at its target positions); returns the model (eval mode) and the
    seconds training took."""
    start = time.perf_counter()
    model = new_model(recipe)
    pool = items(recipe.task, recipe.n_pool, recipe.seed)
    tokens = token_ids(model, [r.prompt for r in pool])
    answers = _answer_ids(model, [r.answer for r in pool])
    extra = _drill_batches(model, recipe)
    gen = torch.Generator().manual_seed(recipe.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, recipe.lr, total_steps=recipe.steps,
                                                pct_start=0.1)  # fmt: skip
    cross_entropy = torch.nn.functional.cross_entropy
    model.train()
    for _ in range(recipe.steps):
        idx = torch.randint(len(pool), (recipe.batch,), generator=gen)
        loss = cross_entropy(model(tokens[idx])[:, -1], answers[idx])
        for drill_tokens, targets in extra:
            idx = torch.randint(len(drill_tokens), (recipe.batch,), generator=gen)
            logits = model(drill_tokens[idx])
            loss = loss + cross_entropy(logits.flatten(0, 1), targets[idx].flatten(),
                                        ignore_index=IGNORE)  # fmt: skip
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    model.eval()
    return model, time.perf_counter() - start
