"""The Python API refuses the masking and generation arguments the command line refuses, with
the same one-line checks (``interp_heads.arguments``), and no hook is left attached."""

from __future__ import annotations

import pytest

from interp_heads.errors import InputError
from interp_heads.generation.decode import generate
from interp_heads.interventions.masks import mask_heads

PROMPTS = ["Repeat the word: cat\nAnswer: ", "Repeat the word: dog\nAnswer: "]


def _no_hooks_left(model) -> bool:
    return all(not hp.fwd_hooks for hp in model.hook_dict.values())


@pytest.mark.parametrize("factor", [float("nan"), float("inf"), -float("inf"), "1", True, None])
def test_mask_heads_refuses_a_scale_factor_that_is_not_a_finite_number(tiny, untyped, factor):
    with pytest.raises(InputError, match="scale_factor must be a finite number"):
        with mask_heads(tiny, ["L0H0"], "scale", scale_factor=factor):
            generate(tiny, PROMPTS, 2)
    assert _no_hooks_left(tiny)


def test_the_config_and_the_api_say_the_same_of_a_scale_factor(untyped):
    from interp_heads.config.run_config import RunConfig
    from interp_heads.errors import PipelineError

    with pytest.raises(PipelineError, match="finite number"):
        RunConfig(tasks=["x"], ablation="scale", scale_factor=float("inf"))


@pytest.mark.parametrize("seed", [float("nan"), 1.5, "0", 2**70, -(2**64)])
def test_mask_heads_refuses_a_seed_outside_torchs_range(tiny, untyped, seed):
    with pytest.raises(InputError, match="seed must be"):
        with mask_heads(tiny, ["L0H0"], "resample", values=PROMPTS, seed=seed):
            generate(tiny, PROMPTS, 2)
    assert _no_hooks_left(tiny)


@pytest.mark.parametrize("seed", [2**70, -(2**64), float("nan")])
def test_generate_refuses_a_seed_outside_torchs_range(tiny, untyped, seed):
    with pytest.raises(InputError, match="seed must be"):
        generate(tiny, PROMPTS, 2, temperature=0.8, seed=seed)


def test_mask_heads_refuses_positions_out_of_range_for_every_prompt(tiny, untyped):
    with pytest.raises(InputError, match=r"positions \[999\] are out of range"):
        with mask_heads(tiny, ["L0H0"], "zero", positions=[999]):
            generate(tiny, PROMPTS, 2)
    assert _no_hooks_left(tiny)


def test_positions_reached_by_generated_tokens_are_fine(tiny, untyped):
    n = len(tiny.to_tokens(PROMPTS[0])[0])
    with mask_heads(tiny, ["L0H0"], "zero", positions=[n + 1]):
        generate(tiny, PROMPTS, 4, stop_at_eos=False)


@pytest.mark.parametrize("hooks", [[("blocks.0.attn.hook_z", None)], [(None, None)], [1], "x"])
def test_generate_refuses_fwd_hooks_that_are_not_name_function_pairs(tiny, untyped, hooks):
    with pytest.raises(InputError, match="fwd_hooks"):
        generate(tiny, PROMPTS, 2, fwd_hooks=hooks)
    assert _no_hooks_left(tiny)


def test_generate_refuses_an_empty_list_of_prompts(tiny, untyped):
    with pytest.raises(InputError, match="prompts is empty"):
        generate(tiny, [], 2)


@pytest.mark.parametrize("kind", ["mean", "resample"])
def test_mask_heads_says_the_values_are_empty(tiny, untyped, kind):
    with pytest.raises(InputError, match="values is empty"):
        with mask_heads(tiny, ["L0H0"], kind, values=[]):
            generate(tiny, PROMPTS, 2)
    assert _no_hooks_left(tiny)
