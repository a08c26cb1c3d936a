"""``resample``: a masked head's ``z`` is its mean over one other prompt, drawn (seeded) per head."""

from interp_heads.interventions.kinds.base import KINDS, Ablation


@KINDS.register
class Resample(Ablation):
    name = "resample"

    def values(self, model, prompts, *, batch_size: int = 32, batch_padding: int | None = None):
        from interp_heads.interventions.means import head_means

        return head_means(
            model, prompts, batch_size=batch_size, batch_padding=batch_padding, per_prompt=True
        )

    def replacement(self, layer, heads, values, generator):
        import torch

        if not isinstance(values, list) or not values:
            raise ValueError(
                "kind='resample' needs values=head_means(model, prompts, per_prompt=True)"
            )
        picks = torch.randint(len(values), (len(heads),), generator=generator).tolist()
        return torch.stack([values[p][layer][h] for p, h in zip(picks, heads, strict=True)])

    def linear_baseline(self, z_sum, counts, seed):
        per_prompt = z_sum / counts.to(z_sum.dtype)[:, None, None, None]
        return per_prompt[derangement(len(counts), seed)]


def derangement(n: int, seed: int):
    """A seeded permutation without fixed points (the identity when n == 1)."""
    import torch

    if n == 1:
        return torch.zeros(1, dtype=torch.long)
    gen = torch.Generator().manual_seed(seed)
    shift = int(torch.randint(1, n, (1,), generator=gen))
    perm = torch.randperm(n, generator=gen)
    out = torch.empty(n, dtype=torch.long)
    out[perm] = perm.roll(shift)  # each example takes the one `shift` places on in a random cycle
    return out
