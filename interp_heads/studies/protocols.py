"""The two protocols the pages compare, each defined once, and what the pages size differently.

``docs/compare.md`` (``studies.compare``) and ``docs/spec_curve.md`` (``studies.spec_curve``) both
judge the seed claim under "the study's protocol" and "the causal protocol". Each protocol is one
option per choice (:data:`STUDY`, :data:`CAUSAL`; the options are ``studies.spec_curve.OPTIONS``'s
names), and both pages print :func:`definition_lines` first, then :func:`page_differences`: what
each page runs differently (examples, draws, ks), read from the configs and the study's sizes,
so a verdict that differs between the pages has its reason beside it.

"The paper's k" is defined here too (:data:`PAPER_K`, :func:`paper_k_text`), for every page.
"""

from __future__ import annotations

STUDY = {"ranking": "probe", "intervention": "scale", "scope": "generated", "format": "study",
         "reference": "study", "examples": "all", "k": "literal", "pool": "outside"}  # fmt: skip
CAUSAL = {"ranking": "ablation_atp", "intervention": "mean", "scope": "all", "format": "plain",
          "reference": "gold", "examples": "correct", "k": "literal", "pool": "outside"}  # fmt: skip
NAMES = {"study": "the study's protocol", "causal": "the causal protocol"}
CONFIGS = {"study": "configs/cognitive_mirrors.toml", "causal": "configs/compare/causal.toml"}
WORDS = {
    "ranking": {"probe": "the study's probe (grad x act of a per-head skill classifier)",
                "ablation_atp": "ablation_atp (each head's estimated mean-ablation effect)"},
    "intervention": {"scale": "hook_z x 1e-4", "mean": "hook_z -> its mean"},
    "scope": {"generated": "generated positions (the prompt's pass unmasked)",
              "last": "the last position of each pass", "all": "every position"},
    "format": {"study": "the study's JSON template", "plain": "plain completion"},
    "reference": {"study": "the study's rule (BLEU vs the unmasked answer, ROUGE-1 or cosine "
                           "vs gold)", "gold": "accuracy against the gold answer"},
    "examples": {"all": "every evaluated example",
                 "correct": "those the unmasked model answers right"},
    "k": {"literal": "k = 32", "fractions": "k = 8 (the paper's fraction)"},
    "pool": {"outside": "RandomK drawn outside TopK", "all": "RandomK drawn from every head"},
}  # fmt: skip

# the Cognitive Mirrors paper's k (Ma et al. 2025): its figure masks 16, 32, 64 and 128 of its
# model's 1,024 heads (32 layers x 32 heads) and states its claim at k = 32
PAPER_KS = (16, 32, 64, 128)
PAPER_K = 32
PAPER_HEADS = 1024


def fraction_k(n_heads: int) -> int:
    """The paper's k as the same fraction of ``n_heads`` heads (8 of SmolLM2's 270)."""
    return max(1, round(PAPER_K * n_heads / PAPER_HEADS))


def paper_k_text(n_heads: int = 270) -> str:
    """The one definition of "the paper's k" every page states."""
    return (
        f"The paper's k is {PAPER_K} of its model's {PAPER_HEADS:,} heads "
        f"({PAPER_K / PAPER_HEADS:.1%}; its grid {', '.join(map(str, PAPER_KS))}). Of "
        f"{n_heads} heads, k = {PAPER_K} is the paper's k taken literally "
        f"({PAPER_K / n_heads:.1%} of the heads) and k = {fraction_k(n_heads)} is the paper's k "
        f"as a fraction ({fraction_k(n_heads) / n_heads:.1%})."
    )


def definition_lines(ends=None) -> list[str]:
    """A table: each choice and the option each protocol takes (``ends``: name -> options)."""
    ends = ends or {"study": STUDY, "causal": CAUSAL}
    choices = list(dict.fromkeys(c for end in ends.values() for c in end))
    out = ["| choice | " + " | ".join(NAMES.get(n, n) for n in ends) + " |",
           "|---" * (len(ends) + 1) + "|"]  # fmt: skip
    for c in choices:
        said = [WORDS.get(c, {}).get(end.get(c), str(end.get(c, "-"))) for end in ends.values()]
        out.append(f"| {c} | " + " | ".join(said) + " |")
    return out


def _config(path: str) -> dict:
    import tomllib

    from interp_heads.store.files import UnsafeFile, read_plain

    try:  # a bounded read of a plain file: a link or a FIFO in its place is no config
        return tomllib.loads(read_plain(path).decode("utf-8"))
    except (OSError, ValueError, UnsafeFile):
        return {}


def page_differences(spec_sizes: dict, spec_common: dict, spec_ks=(32, 8)) -> list[str]:
    """What the specification curve (``spec_sizes["full"]``, ``spec_common``, the ks its cells
    read) runs differently from docs/compare.md (each protocol's config), one line each."""
    full = spec_sizes.get("full", {})
    pools = {True: "outside TopK", False: "from every head"}
    out = []
    for end, path in CONFIGS.items():
        cfg = _config(path)
        if not cfg:
            continue
        ks = ", ".join(map(str, cfg.get("ks", []))) + (" and each task's elbow k"
                                                        if cfg.get("elbow") else "")  # fmt: skip
        pool = {"study": STUDY, "causal": CAUSAL}[end]["pool"] == "outside"
        same = bool(cfg.get("exclude_top")) == pool
        out.append(
            f"- {NAMES[end]}: docs/compare.md evaluates {cfg.get('n_eval')} examples a task with "
            f"{cfg.get('seeds')} RandomK draws at k = {ks}"
            + (
                ", filtered to the right answers before the sweep"
                if cfg.get("filter_correct")
                else ""
            )  # fmt: skip
            + f"; docs/spec_curve.md {full.get('n_eval')} examples with "
            f"{spec_common.get('seeds')} draws at k = {' and '.join(map(str, spec_ks))}, the "
            "right answers read from the records. "
            + (
                f"Both draw RandomK {pools[pool]}."
                if same
                else f"docs/compare.md draws RandomK {pools[bool(cfg.get('exclude_top'))]}, "
                f"docs/spec_curve.md {pools[pool]}."
            )  # fmt: skip
        )
    return out
