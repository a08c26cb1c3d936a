"""The same small job on both model backends gives the same results (as circuit-tracer checks its
two backends against each other).

The job, on the tiny model's random Llama checkpoint (``models.backends.bridge.tiny_checkpoint``:
the bridge's ``tiny`` model; the hooked backend loads the same folder through its own converter,
so both hold the same weights) and 8 prompts in ``tiny_echo``'s format with words of 2 to 5
letters (left-padded batches): their tokens and last-position logits; the attribution scores of
the default method (``auto``: ``atp`` on this task, and ``ablation_atp`` with its default
``mean`` kind, one rival and one exact layer on the same task without corrupted prompts) and of
``exact`` patching (which exercises every patching difference: the frozen prefix cache, the
names activations are cached under, positions of a forward from a residual input); and 8 greedy
tokens per prompt unmasked and under ``mask_heads`` with 4 heads zeroed and mean-ablated (the
KV-cached step of each backend).

Why stored outputs: the two backends never share an environment. ``hooked`` needs TransformerLens
2.18 (the default environment, transformers 4.57) and ``bridge`` needs TransformerLens 4.3 (the
tl4 environment, transformers 5.23); neither TransformerLens has the other's model class, so no
process can run both. Each environment therefore runs its own backend live and compares it with
the other backend's outputs stored in ``tests/data/backend_parity/<backend>.json``, and with its
own stored outputs, tightly (so a stored file cannot drift from what its code computes: the
default environment vouches for ``hooked.json``, ``make test-tl4`` for ``bridge.json``, and each
compares a live run with the other). The weights are checked equal first (a digest of the saved
checkpoint), so a difference in how the two transformers versions build the random checkpoint
cannot pass for a backend difference. Regenerate a file only for an intended change of results,
in that backend's environment: ``PYTHONPATH=. python tests/unit/models/test_backend_parity.py``.

Tolerance: the hooked backend is TransformerLens' own float32 forward, the bridge Hugging Face's
eager Llama: the same function in a different order of float32 operations. Logits and scores
must agree within :data:`TOL` of their scale (the measured differences and why the bound holds
are written next to it); tokens and greedy generations must be equal.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path

import pytest
import torch

from interp_heads.models.tl_compat import HAS_BRIDGE, HAS_HOOKED
from tests.helpers import DATA

STORED = DATA / "backend_parity"
N_NEW = 8
HEADS = [(0, 1), (1, 2), (2, 0), (2, 3)]  # masked in the greedy runs (the tiny model: 3 x 4)
# Bounds relative to the largest |value| of the reference (logits, or one method's scores).
# Measured between the backends on this job (max |difference| / max |value|): logits 1.4e-5 / 5.3
# (2.6e-6), atp 1.6e-6 / 0.21 (7.5e-6), ablation_atp 2.2e-6 / 1.03 (2.2e-6), exact 7.3e-7 / 0.59
# (1.2e-6); on the 8 first tiny_echo rows (one prompt length) atp 1.0e-5 / 3.06 (3.4e-6). The bound
# is 13x the worst of these, and the smallest gap between two heads' sorted scores is at least
# 2e-3 of the scale (20x the bound): scores within it rank the heads in the same order.
TOL = 1e-4
# Within one backend (a stored file against a live run): float32 reductions on another CPU or
# thread count (measured: atp 2.1e-6 / 0.21 = 1.0e-5 with 2 threads against the stored file).
SAME_BACKEND_TOL = 5e-5


def weights_digest(folder: Path) -> str:
    """SHA-256 over the checkpoint's tensors by name (independent of either backend)."""
    from safetensors.torch import load_file

    h = hashlib.sha256()
    for name, t in sorted(load_file(str(folder / "model.safetensors")).items()):
        h.update(name.encode())
        h.update(t.float().contiguous().numpy().tobytes())
    return h.hexdigest()


# words of 2 to 5 letters, so prompts differ in length and batches are left-padded; each
# corrupted word has its clean word's length, as patching needs
WORDS = [("ox", "ab"), ("cat", "dog"), ("lion", "bear"), ("horse", "camel"), ("fig", "jar"),
         ("moon", "star"), ("tiger", "zebra"), ("up", "on")]  # fmt: skip


def echo_task():
    """``tiny_echo``'s prompt and answer format over :data:`WORDS`."""
    from interp_heads.tasks.schema import Example, Task

    rows = [
        Example(
            f"w{i}",
            "echo",
            f"Repeat the word: {word}\nAnswer: ",
            word,
            corrupted_prompt=f"Repeat the word: {other}\nAnswer: ",
            corrupted_answer=other,
        )
        for i, (word, other) in enumerate(WORDS)
    ]
    return Task("echo", rows)


def run_job(backend: str) -> dict:
    """The job's outputs on ``backend`` (JSON-ready)."""
    from interp_heads.attribution import attribute_heads
    from interp_heads.generation.decode import generate_tokens, last_logits, tokenize_left_padded
    from interp_heads.interventions.masks import mask_heads
    from interp_heads.interventions.means import head_means
    from interp_heads.models.backends.bridge import tiny_checkpoint
    from interp_heads.models.load import load_model
    from interp_heads.tasks.prompts import render

    folder = tiny_checkpoint()
    model = load_model(str(folder), device="cpu", backend=backend, use_cache=False)
    task = echo_task()
    clean = dataclasses.replace(
        task,
        examples=[
            dataclasses.replace(e, corrupted_prompt=None, corrupted_answer=None) for e in task
        ],
    )
    prompts = render(model, [e.prompt for e in task], fmt=task.fmt)
    tokens, mask = tokenize_left_padded(model, prompts)
    with torch.no_grad():
        logits = last_logits(model, tokens, mask)
    out = {
        "backend": backend,
        "weights": weights_digest(folder),
        "tokens": tokens.tolist(),
        "mask": mask.tolist(),
        "logits": logits.tolist(),
        "scores": {},
    }
    runs = {
        "atp": (task, "auto", {}),
        "ablation_atp": (clean, "auto", {"ablation": "mean", "rivals": 1, "exact_layers": 1}),
        "exact": (task, "exact", {}),
    }
    for key, (t, method, opts) in runs.items():
        scores = attribute_heads(model, t, method, batch_size=4, **opts)
        assert scores.method == key, scores.method
        out["scores"][key] = scores.scores.tolist()
    out["greedy"] = generate_tokens(model, prompts, N_NEW, batch_size=4)
    with mask_heads(model, HEADS, "zero"):
        out["greedy_zero"] = generate_tokens(model, prompts, N_NEW, batch_size=4)
    means = head_means(model, prompts)
    with mask_heads(model, HEADS, "mean", values=means):
        out["greedy_mean"] = generate_tokens(model, prompts, N_NEW, batch_size=4)
    return out


def _stored(backend: str) -> dict:
    path = STORED / f"{backend}.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing; write it in {backend}'s environment (module docstring)")
    return json.loads(path.read_text())


def _live() -> dict:
    return run_job("hooked" if HAS_HOOKED else "bridge")


@pytest.fixture(scope="module")
def live():
    if not (HAS_HOOKED or HAS_BRIDGE):
        pytest.skip("no backend in this environment")
    return _live()


def _close(mine, theirs, rtol: float, what: str) -> None:
    """``max |mine - theirs| <= rtol * max |theirs|``."""
    ref = torch.tensor(theirs)
    diff, scale = float((torch.tensor(mine) - ref).abs().max()), float(ref.abs().max())
    assert diff <= rtol * scale, f"{what} differ by {diff:.2e} (max |value| {scale:.2e})"


def assert_same_job(mine: dict, theirs: dict, rtol: float) -> None:
    """``mine`` and ``theirs`` hold the same weights, tokens and greedy tokens, and logits and
    scores within ``rtol`` of their scale."""
    pair = f"{mine['backend']} vs {theirs['backend']}"
    assert mine["weights"] == theirs["weights"], f"{pair}: different checkpoints, not comparable"
    assert mine["tokens"] == theirs["tokens"] and mine["mask"] == theirs["mask"], pair
    _close(mine["logits"], theirs["logits"], rtol, f"{pair}: logits")
    assert set(mine["scores"]) == set(theirs["scores"]) == {"atp", "ablation_atp", "exact"}
    for key, scores in theirs["scores"].items():
        _close(mine["scores"][key], scores, rtol, f"{pair}: {key} scores")
    for key in ("greedy", "greedy_zero", "greedy_mean"):
        assert mine[key] == theirs[key], f"{pair}: {key} tokens differ"


def test_the_masks_change_the_greedy_tokens(live):
    """The masked runs are a check that can fail: each mask changes some generated tokens."""
    assert live["greedy_zero"] != live["greedy"] and live["greedy_mean"] != live["greedy"]


def test_live_run_equals_this_backends_stored_outputs(live):
    assert_same_job(live, _stored(live["backend"]), SAME_BACKEND_TOL)


def test_live_run_equals_the_other_backends_stored_outputs(live):
    other = "bridge" if live["backend"] == "hooked" else "hooked"
    assert_same_job(live, _stored(other), TOL)


def dump(job: dict) -> str:
    """The stored file's text: one key per line."""
    return "{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in job.items()) + "\n}\n"


if __name__ == "__main__":  # write this environment's backend's outputs
    job = _live()
    STORED.mkdir(exist_ok=True)
    (STORED / f"{job['backend']}.json").write_text(dump(job))
    print(f"wrote {STORED / (job['backend'] + '.json')}", file=sys.stderr)
