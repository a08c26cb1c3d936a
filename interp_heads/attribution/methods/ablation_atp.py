"""``ablation_atp``: attribution patching against the sweep's own ablation (no corrupted prompts).

First order in each head's ``z - replacement`` (``gradients.ablation_atp_scores``), or with
``rivals = K`` linearised in the logits of the answer and its K strongest rivals with the
log-softmax taken exactly (``softmax_atp``). ``exact_layers = N`` scores the heads of the first N
layers by their exact mean-ablation drop instead: the first-order estimate fails there
(``docs/method.md``). ``refine`` confirms the top heads by exact mean ablation.
"""

import dataclasses
from dataclasses import dataclass, field

from interp_heads.attribution.methods.base import METHODS, Method, NonNeg
from interp_heads.attribution.methods.base import Options as Common
from interp_heads.errors import InputError


@METHODS.register
class AblationAtP(Method):
    name = "ablation_atp"
    gradient = True
    target = (
        "first-order estimate of the drop of log p(answer first token) when the head's z "
        "is replaced by its {kind} ablation value (grad x (z - replacement))"
    )
    signed = True
    refine_with = "mean_ablation"
    kinds = "linear"

    @dataclass(frozen=True)
    class Options(Common):
        """Its own options (None: the defaults of :meth:`defaults`)."""

        exact_layers: NonNeg | None = field(
            default=None,
            metadata={
                "help": "ablation_atp: score the first N layers' heads by exact mean ablation "
                "(None: 1 with mean ablation, else 0)"
            },
        )
        rivals: NonNeg | None = field(
            default=None,
            metadata={
                "help": "ablation_atp: linearise the logits of the answer and its N strongest "
                "rivals and take the log-softmax exactly (None: 1 with mean ablation, else 0; "
                "0: plain first order)"
            },
        )
        lookahead: NonNeg = field(
            default=0,
            metadata={
                "help": "ablation_atp: run each head's mean ablation exactly through N blocks "
                "and take only the rest to first order (0: first order from the head on)"
            },
        )

    def defaults(self, opts):
        """With mean ablation: layer 0 exact and one rival (docs/attribution.md, measured); the
        other kinds: plain first order (``zero`` is then ``gradxact``)."""
        mean = opts.ablation == "mean"
        if opts.exact_layers is None:
            opts = dataclasses.replace(opts, exact_layers=1 if mean else 0)
        if opts.rivals is None:
            opts = dataclasses.replace(opts, rivals=1 if mean else 0)
        return opts

    def check(self, opts, model_cfg=None) -> None:
        if opts.lookahead and opts.ablation != "mean":
            raise InputError(
                "lookahead runs each head's mean ablation exactly: it needs ablation 'mean'"
            )
        if opts.exact_layers and opts.ablation != "mean":
            raise InputError(
                "exact_layers scores heads by exact mean ablation: it needs ablation 'mean'"
            )
        if model_cfg is None:
            return
        n_layers, d_vocab = model_cfg.n_layers, model_cfg.d_vocab
        if not 0 <= (opts.rivals or 0) < d_vocab:
            raise InputError(f"rivals must be in 0..{d_vocab - 1}, got {opts.rivals}")
        if not 0 <= (opts.exact_layers or 0) <= n_layers:
            raise InputError(f"exact_layers must be in 0..{n_layers}, got {opts.exact_layers}")
        if not 0 <= opts.lookahead <= n_layers:
            raise InputError(f"lookahead must be in 0..{n_layers}, got {opts.lookahead}")

    def exact_layers(self, opts) -> int:
        return opts.exact_layers or 0

    def score(self, model, task, batches, opts, per_example):
        from interp_heads.attribution.gradients import ablation_atp_scores
        from interp_heads.attribution.lookahead import lookahead_scores
        from interp_heads.attribution.softmax_atp import ablation_softmax_scores

        kind, seed = opts.ablation, opts.seed
        if opts.lookahead:
            scores = lookahead_scores(
                model,
                batches,
                opts.lookahead,
                rivals=opts.rivals,
                max_rows=opts.max_rows,
                per_example=per_example,
            )
        elif opts.rivals:
            scores = ablation_softmax_scores(
                model, batches, kind, rivals=opts.rivals, seed=seed, per_example=per_example
            )
        else:
            scores = ablation_atp_scores(model, batches, kind, seed=seed, per_example=per_example)
        target = self.target.format(kind=kind)
        if opts.lookahead:
            target += (
                f"; the ablation run exactly through {opts.lookahead} block(s), first order after"
            )
        if opts.rivals:
            target += f"; linearised in the logits of the answer and {opts.rivals} rivals, exact log-softmax"
        if opts.exact_layers:
            _exact_first_layers(model, batches, opts, scores, per_example)
            target += f"; layers < {opts.exact_layers}: the exact drop (mean ablation)"
        return scores, target


def _exact_first_layers(model, batches, opts, scores, per_example) -> None:
    """Overwrite the first ``exact_layers`` layers' scores with their exact mean-ablation drop."""
    import torch

    from interp_heads.attribution.patching import mean_ablation_scores

    n = opts.exact_layers
    first = [(layer, h) for layer in range(n) for h in range(model.cfg.n_heads)]
    sub: list = []
    exact, _ = mean_ablation_scores(
        model, batches, heads=first, max_rows=opts.max_rows, objective="logprob", per_example=sub
    )
    scores[:n] = exact[:n]
    per_example[0][:, :n] = torch.cat(sub)[:, :n]
