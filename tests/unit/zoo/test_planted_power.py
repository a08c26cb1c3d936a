"""The trained-model calibration (``zoo.planted_power``): its per-prompt scores against a brute
force written here (TransformerLens hooks, one head set at a time), its true drops against a loop
over disjoint sets, and its rates on populations whose answer is known."""

from itertools import combinations

import numpy as np
import torch

from interp_heads.zoo import planted_power as pp
from interp_heads.zoo.truth import truth_batch


def _brute_hits(model, task, heads) -> np.ndarray:
    """1 where the model with ``heads`` zeroed at hook_z still answers a prompt it answers."""
    b = truth_batch(model, task)

    def zero(h):
        def hook(z, hook):  # noqa: ARG001
            z = z.clone()
            z[:, :, h] = 0.0
            return z

        return hook

    hooks = [(f"blocks.{layer}.attn.hook_z", zero(h)) for layer, h in heads]
    with torch.no_grad():
        clean = model(b.clean)[:, -1].argmax(-1) == b.answer
        masked = model.run_with_hooks(b.clean, fwd_hooks=hooks)[:, -1].argmax(-1) == b.answer
    return masked[clean].float().numpy()


def test_population_scores_match_hooks_one_set_at_a_time(tiny_zoo_model):
    zm = tiny_zoo_model
    (pop,) = pp.populations(zm, n_prompts=64, ks=(2,), kind="zero")
    n_heads = zm.model.cfg.n_heads
    every = [(la, h) for la in range(zm.model.cfg.n_layers) for h in range(n_heads)]
    assert len(pop.sets) == len(list(combinations(every, 2)))
    task = zm.held_out(64)
    for row, mask in enumerate(pop.sets):
        heads = [every[i] for i in range(len(every)) if (int(mask) >> i) & 1]
        np.testing.assert_array_equal(pop.hits[row], _brute_hits(zm.model, task, heads))


def test_true_drop_is_the_mean_of_disjoint_sets_minus_the_set():
    rng = np.random.default_rng(0)
    sets = np.array([sum(1 << i for i in c) for c in combinations(range(5), 2)])
    pop = pp.Population("p", 2, 5, sets, (rng.random((len(sets), 30)) < 0.7).astype(float))
    for i, d in enumerate(pop.true_drops()):
        others = [j for j in range(len(sets)) if not (int(sets[i]) & int(sets[j]))]
        assert others and np.isclose(d, np.mean([pop.hits[j].mean() for j in others])
                                     - pop.hits[i].mean())  # fmt: skip


def _population(critical: bool) -> pp.Population:
    """Six heads, sets of two; with ``critical``, every set holding head 0 loses every prompt."""
    sets = np.array([sum(1 << i for i in c) for c in combinations(range(6), 2)])
    hits = np.ones((len(sets), 80))
    if critical:
        hits[(sets & 1) == 1] = 0.0
    return pp.Population("p", 2, 6, sets, hits)


def test_no_difference_anywhere_gives_no_positive_and_no_power_row():
    rows = pp.run([_population(critical=False)], n=24, draws=5, replicates=40, seed=0)
    assert {r["kind"] for r in rows} == {"zoo_null"}
    assert all(r["positives"] == 0 and r["fpr"] == 0.0 for r in rows)


def test_a_set_that_loses_every_prompt_is_found_by_every_rule():
    rows = pp.run([_population(critical=True)], n=24, draws=5, replicates=40, seed=0)
    power = [r for r in rows if r["kind"] == "zoo_power"]
    # the sets holding head 0 lose everything, their disjoint draws keep everything: drop 1
    assert [r["effect"] for r in power] == [0.7] * 3
    assert all(r["power"] == 1.0 and r["true_drop"] == 1.0 for r in power)
