"""The config digest: which keys a run folder's ``config_digest`` leaves out, and the digest.

Fixed once keys exist: changing it would make existing run folders refuse to resume (a digest
differs, so ``--force`` is needed; resume keys still decide what is reused).
"""

from __future__ import annotations

from interp_heads.config.options import kept_in, option_defaults, placement_keys
from interp_heads.store import config_digest

# speed and checks only: the results do not depend on them (``verify`` adds a check of the ranking
# and changes no result table; ``known_heads`` only marks heads on the page); nor on the placement
# keys (``config.options.placement_keys``), left out too
NOT_IN_DIGEST = {"threads", "verify", "known_heads"}
# Keys added after run folders existed: left out of the digest at their default value, so that
# those folders keep resuming (a non-default value is a different config). A registered variant's
# option (``config.options``) is left out at its default too, without an entry here, unless it
# is ``kept_in`` this digest (COMET's ``comet_model``: held at its default None from the start).
DIGEST_IF_SET = {
    "rivals": 0,  # ablation_atp's: its default None has always been in the digest
    "positions": "all",
    "backend": "hooked",
    "reference": "gold",
    "free_form": False,
    "elbow": False,
    "damage_matched": False,
    "skip": 0,
    "baseline": "all",
    "ranking": None,
    "ranking_task": None,
    "heads": None,
    "allow_overlap": False,
    "allow_other_model": False,
    "allow_other_task": False,
    "analyses": [],
    "stability_ks": None,
    "sufficiency": False,
    "sufficiency_seeds": 3,
    "sufficiency_grid": "mib",
    "sufficiency_metrics": ["accuracy", "answer_logprob", "kl_unmasked"],
    "sufficiency_search": False,
    "sufficiency_search_ablation": None,
    "sufficiency_target": 0.9,
    "sufficiency_step": 0.1,
    "sufficiency_patience": 8,
    "sufficiency_upper": 1.1,
    "sufficiency_resamples": 0,
    "batch_padding": None,
}


def digest_of(config: dict) -> str:
    """The digest of a config's plain values (``RunConfig.to_dict``), keys above left out."""
    kept_options = kept_in("run")
    if_set = {k: v for k, v in option_defaults().items() if k not in kept_options} | DIGEST_IF_SET
    left_out = NOT_IN_DIGEST | set(placement_keys())
    kept = {
        k: v
        for k, v in config.items()
        if k not in left_out and not (k in if_set and v == if_set[k])
    }
    return config_digest(kept)
