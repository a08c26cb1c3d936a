"""Generation from a shared unmasked prompt prefix equals generation over the whole prompt.

The reference is a plain ``hook_z`` hook written from the definition of ``positions="last"``
(edit ``z[:, -1, h]`` of every forward pass), run on the whole prompt with the KV cache; the
prefix is built once and reused across masks, as a sweep does.
"""

from __future__ import annotations

import pytest
import torch

from interp_heads.generation.decode import generate_tokens
from interp_heads.generation.prefix import PromptPrefixes
from interp_heads.interventions.masks import mask_heads
from interp_heads.interventions.means import head_means
from tests.helpers import last_position_hooks

PROMPTS = ["a", "say hello there", "xyz", "one two three four five six", "q?", "the cat"]
MASKS = [[(0, 1), (1, 3), (2, 0), (2, 2)], [(0, 0), (0, 2)], [(2, 1)]]


def _gen(model, **kw):
    return generate_tokens(model, PROMPTS, 8, batch_size=4, stop_at_eos=False, **kw)


def _kv_tensors(prefix) -> list[torch.Tensor]:
    """A prefix's key and value tensors: the hooked backend's static entries or the bridge's
    Hugging Face cache layers."""
    held = getattr(prefix, "entries", None) or prefix.layers
    return [t for e in held for t in (e.keys, e.values)]


@pytest.mark.parametrize("fast", [True, False])
def test_prefix_generation_equals_whole_prompt_generation_under_last_position_masks(tiny, fast):
    means = head_means(tiny, PROMPTS)
    prefixes = PromptPrefixes(tiny, PROMPTS, batch_size=4, fast_attention=fast)
    assert len(prefixes) == 2  # two batches, both longer than one token
    hits = []
    get = prefixes.get
    prefixes.get = lambda tokens, mask: hits.append(get(tokens, mask)) or hits[-1]
    answers = []
    for heads in MASKS:
        reference = _gen(tiny, fwd_hooks=last_position_hooks(heads, means), fast_attention=fast)
        with mask_heads(tiny, heads, "mean", values=means, positions="last"):
            shared = _gen(tiny, prefixes=prefixes, fast_attention=fast)
        assert shared == reference
        answers.append(shared)
    assert _gen(tiny, prefixes=prefixes, fast_attention=fast) == _gen(tiny, fast_attention=fast)
    assert len({str(a) for a in answers}) == len(MASKS)  # the masks differ (the check could fail)
    assert len(hits) == 2 * (len(MASKS) + 1) and all(h is not None for h in hits)


def test_prefix_logits_equal_whole_prompt_logits(tiny):
    from interp_heads.generation.decode import batches
    from interp_heads.generation.kv_cache import KVCache
    from interp_heads.models.backends import backend_of

    _, tokens, mask = next(batches(tiny, PROMPTS, 6, None))
    whole = KVCache(tiny, 6).step(tokens, mask, mask)
    prefix = backend_of(tiny).prompt_prefix(tiny, tokens[:, :-1], mask[:, :-1])
    before = [t.clone() for t in _kv_tensors(prefix)]
    part = KVCache(tiny, 6, prefix).step(tokens[:, -1:], mask[:, -1:], mask)
    torch.testing.assert_close(part, whole, rtol=1e-5, atol=1e-5)
    KVCache(tiny, 6, prefix).step(tokens[:, -1:], mask[:, -1:], mask)  # a second condition
    after = _kv_tensors(prefix)
    assert len(after) == len(before) and all(map(torch.equal, before, after))


def test_prefix_is_refused_while_a_hook_is_active(tiny):
    with mask_heads(tiny, [(0, 1)], "zero", positions="last", warn_if_idle=False):
        with pytest.raises(RuntimeError, match="before a mask"):
            PromptPrefixes(tiny, PROMPTS)


def test_a_batch_the_prefixes_do_not_know_is_generated_whole(tiny):
    prefixes = PromptPrefixes(tiny, PROMPTS[:3], batch_size=4)
    assert _gen(tiny, prefixes=prefixes) == _gen(tiny)  # other batches: no prefix found


@pytest.mark.parametrize("positions", ["last", "generated"])
@pytest.mark.parametrize("fast", [True, False])
def test_copies_of_each_batch_under_row_masks_equal_each_mask_alone(tiny, positions, fast):
    """A packed batch over one prefix (``copies``): copy ``c`` of every prompt, masked by
    condition ``c`` through ``mask_rows``, gives the tokens of that mask alone."""
    from interp_heads.interventions.row_masks import RowMasks, mask_rows

    means = head_means(tiny, PROMPTS)
    whole = positions == "generated"
    prefixes = PromptPrefixes(tiny, PROMPTS, batch_size=4, fast_attention=fast, whole=whole)
    reference = []
    for heads in MASKS:
        with mask_heads(tiny, heads, "mean", values=means, positions=positions):
            reference.append(_gen(tiny, prefixes=prefixes, fast_attention=fast))
    assert len({str(r) for r in reference}) == len(MASKS)  # the masks differ
    masks = RowMasks.build(tiny, [(h, "mean", means, 0) for h in MASKS], positions=positions)
    n, seen, hits = len(PROMPTS), [], []
    get = prefixes.get
    prefixes.get = lambda tokens, mask: hits.append(get(tokens, mask)) or hits[-1]
    with mask_rows(tiny, masks, warn_if_idle=False) as handle:

        def on_batch(idx):
            seen.append(len(idx))
            handle.rows = [i // n for i in idx]

        packed = _gen(
            tiny, prefixes=prefixes, fast_attention=fast, copies=len(MASKS), on_batch=on_batch
        )
    assert [packed[c * n : (c + 1) * n] for c in range(len(MASKS))] == reference
    assert seen == [4 * len(MASKS), 2 * len(MASKS)]  # each batch once, with its copies
    assert len(hits) == 2 and all(h is not None for h in hits)  # from the batches' prefixes


def test_copies_needs_a_list_of_prompts(tiny):
    from interp_heads.errors import InputError

    with pytest.raises(InputError, match="copies"):
        generate_tokens(tiny, "a", 2, copies=2)


def test_shared_prefixes_are_made_once_kept_while_memory_allows_and_released(tiny, monkeypatch):
    from interp_heads.generation import prefix as px
    from interp_heads.models import devices

    monkeypatch.setattr(devices, "free_bytes", lambda device: 10**12)
    one = px.shared_prefixes(tiny, PROMPTS, batch_size=4, whole=True)
    assert px.shared_prefixes(tiny, PROMPTS, batch_size=4, whole=True) is one
    assert px.shared_prefixes(tiny, PROMPTS, batch_size=3, whole=True) is not one  # batches
    assert px.shared_prefixes(tiny, PROMPTS[:3], batch_size=4, whole=True) is not one  # prompts
    whole = _gen(tiny)
    assert _gen(tiny, prefixes=one) == whole  # the unmasked answers, read from the prefix
    held = [t for p in one._kv.values() for t in _kv_tensors(p.kv)]
    assert one.nbytes == sum(t.nbytes for t in held) > 0
    px.release_prefixes(tiny)
    assert px.shared_prefixes(tiny, PROMPTS, batch_size=4, whole=True) is not one
    px.release_prefixes(tiny)
    monkeypatch.setattr(devices, "free_bytes", lambda device: 0)  # nothing may be kept
    two = px.shared_prefixes(tiny, PROMPTS, batch_size=4, whole=True)
    assert len(two) == 2 and px.shared_prefixes(tiny, PROMPTS, batch_size=4, whole=True) is not two
    px.release_prefixes(tiny)
