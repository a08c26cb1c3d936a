"""The config digest: which keys a run folder's ``config_digest`` leaves out, and the digest.

Fixed once keys exist: changing it would make existing run folders refuse to resume (a digest
differs, so ``--force`` is needed; resume keys still decide what is reused).
"""

from __future__ import annotations

from interp_heads.config.options import option_defaults
from interp_heads.config.sections import PLACEMENT
from interp_heads.store import config_digest

# speed, placement and checks only: the results do not depend on them (``verify`` adds a check of
# the ranking and changes no result table; ``known_heads`` only marks heads on the page)
NOT_IN_DIGEST = {"threads", "verify", "known_heads", *PLACEMENT}
# Keys added after run folders existed: left out of the digest at their default value, so that
# those folders keep resuming (a non-default value is a different config). A registered variant's
# option (``config.options``) is left out at its default too, without an entry here.
DIGEST_IF_SET = {
    "exclude_top": False,
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
}


def digest_of(config: dict) -> str:
    """The digest of a config's plain values (``RunConfig.to_dict``), keys above left out."""
    if_set = option_defaults() | DIGEST_IF_SET
    kept = {
        k: v
        for k, v in config.items()
        if k not in NOT_IN_DIGEST and not (k in if_set and v == if_set[k])
    }
    return config_digest(kept)
