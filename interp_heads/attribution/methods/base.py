"""The attribution method's base class, registry and rules (``attribution.methods``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from interp_heads.errors import InputError
from interp_heads.registry import Registry
from interp_heads.vocab import AttributionMethod

AUTO = "auto"
AUTO_CHOICES = ("atp", "ablation_atp")  # with corrupted prompts, without
OPTION_DEFAULTS = {"rivals": None, "exact_layers": None, "lookahead": 0, "steps": 8}


@dataclass
class Options:
    """What ``attribute_heads`` passes a method besides the model and the batches."""

    ablation: str = "mean"
    seed: int = 0
    refine: int | None = None
    exact_layers: int | None = None
    rivals: int | None = None
    lookahead: int = 0
    steps: int = 8
    max_rows: int = 128
    fmt: str = "auto"


class Method:
    """An attribution method. Subclasses set the class attributes and implement :meth:`score`."""

    name: ClassVar[str] = ""
    target: ClassVar[str] = ""  # what the score measures (``HeadScores.target``)
    corrupted: ClassVar[Literal["never", "required", "optional"]] = "never"
    signed: ClassVar[bool] = False  # rank by signed score: largest drop first
    refine_with: ClassVar[Literal["exact", "mean_ablation"]] = "exact"
    kinds: ClassVar[Literal["any", "linear", "mean"]] = "any"  # ablation kinds it estimates
    options: ClassVar[frozenset[str]] = frozenset()  # its own options (``OPTION_DEFAULTS``)
    multi_task: ClassVar[bool] = False  # ranks several tasks together (no ``score``)

    def defaults(self, opts: Options) -> Options:
        """``opts`` with this method's defaults filled in (e.g. ``exact_layers``)."""
        return opts

    def score(self, model, task, batches, opts: Options, per_example: list):
        """``(scores [layer, head], target)``; ``per_example`` receives ``[example, layer, head]``."""
        raise NotImplementedError

    def needs_corrupted(self, opts: Options, has_corrupted: bool) -> bool:
        refine_exact = opts.refine is not None and self.refine_with == "exact"
        optional = self.corrupted == "optional" and has_corrupted
        return self.corrupted == "required" or refine_exact or optional


METHODS: Registry[Method] = Registry("attribution method", vocab=AttributionMethod)


def resolve(name: str, has_corrupted: bool) -> Method:
    """The method ``name`` means for a task (``auto``: atp with corrupted prompts, else ablation_atp)."""
    name = METHODS.canonical(name)
    if name == AUTO:
        name = AUTO_CHOICES[0] if has_corrupted else AUTO_CHOICES[1]
    return METHODS.get(name)


def check_method(
    name: str,
    opts: Options,
    *,
    has_corrupted: bool | None = None,
    model_cfg=None,
    task: str | None = None,
) -> Options:
    """Every rule about method ``name`` with ``opts``; returns ``opts`` with its defaults.

    ``has_corrupted`` None (a config before its tasks are read): ``auto`` passes when either
    method it can mean passes. ``model_cfg`` adds the range checks; ``task`` names the task in
    the message (and that ``auto`` was resolved for it).
    """
    if METHODS.canonical(name) == AUTO and has_corrupted is None:
        errors = []
        for choice in AUTO_CHOICES:
            try:
                return check_method(choice, opts, model_cfg=model_cfg)
            except InputError as exc:
                errors.append(exc)
        raise errors[-1]
    method = resolve(name, bool(has_corrupted))
    said = f"; {name!r} means {method.name!r} for this task" if method.name != name else ""
    where = f"task {task!r}: " if task else ""
    _check_options(method, opts, where, said)
    opts = method.defaults(opts)
    _check_kind(method, opts)
    if model_cfg is not None:
        _check_ranges(opts, model_cfg)
    if has_corrupted is False and method.needs_corrupted(opts, False):
        refine = " with refine" if opts.refine else ""
        raise InputError(
            f"{where}method {method.name!r}{refine} needs corrupted prompts; task has none "
            "(use 'ablation_atp', the default for such tasks, or 'mean_ablation', 'gradxact', "
            "'headmask')"
        )
    return opts


def _check_options(method: Method, opts: Options, where: str, said: str) -> None:
    for option, default in OPTION_DEFAULTS.items():
        if option == "steps":
            continue  # a default-valued keyword of attribute_heads
        if getattr(opts, option) not in (default, 0) and option not in method.options:
            owners = [n for n in METHODS.names() if option in METHODS.get(n).options]
            raise InputError(
                f"{where}{option} needs attribution {' or '.join(map(repr, owners))}{said}"
            )


def _check_kind(method: Method, opts: Options) -> None:
    from interp_heads.interventions.kinds import get_kind

    kind = get_kind(opts.ablation)
    if method.kinds == "mean" and kind.name != "mean":
        raise InputError(f"{method.name} integrates along z -> task mean: use ablation='mean'")
    if method.kinds == "linear" and not kind.linear:
        raise InputError(
            f"ablation kind {kind.name!r} has no linear baseline: {method.name} cannot estimate it"
        )
    if method.refine_with == "mean_ablation" and opts.refine is not None and kind.name != "mean":
        raise InputError(
            f"refine with {method.name} confirms heads by exact mean ablation: use ablation='mean'"
        )
    if opts.lookahead and kind.name != "mean":
        raise InputError(
            "lookahead runs each head's mean ablation exactly: it needs ablation 'mean'"
        )
    if opts.exact_layers and kind.name != "mean":
        raise InputError(
            "exact_layers scores heads by exact mean ablation: it needs ablation 'mean'"
        )


def _check_ranges(opts: Options, cfg) -> None:
    if not 0 <= (opts.rivals or 0) < cfg.d_vocab:
        raise InputError(f"rivals must be in 0..{cfg.d_vocab - 1}, got {opts.rivals}")
    if not 0 <= (opts.exact_layers or 0) <= cfg.n_layers:
        raise InputError(f"exact_layers must be in 0..{cfg.n_layers}, got {opts.exact_layers}")
    if not 0 <= opts.lookahead <= cfg.n_layers:
        raise InputError(f"lookahead must be in 0..{cfg.n_layers}, got {opts.lookahead}")
