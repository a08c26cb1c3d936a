"""The zoo's trained weights, cached like the converted SmolLM2 (``models.cache``): one entry per
recipe digest and library versions, weights with their SHA-256, checked on every load."""

from __future__ import annotations

import json
import logging

from interp_heads.zoo.train import Recipe, ZooModel, accuracy, held_out_task, new_model, train

log = logging.getLogger("interp_heads.zoo")


def zoo_model(recipe: Recipe, *, retrain: bool = False) -> ZooModel:
    """The recipe's trained model: from the cache, or trained now and cached (with its held-out
    accuracy and training seconds). It is not checked against its bar here: ``require_truth``."""
    from interp_heads.models.cache import entry_dir, load_entry, save_entry

    entry = entry_dir(f"zoo:{recipe.digest()}")
    loaded = None if retrain else load_entry(entry)
    if loaded is not None:
        _, state, _ = loaded
        meta = json.loads((entry / "meta.json").read_text())
        model = new_model(recipe)
        model.load_state_dict(state)
        return ZooModel(recipe, model, meta["held_out_accuracy"], meta["train_seconds"],
                        meta["weights_sha256"], cached=True)  # fmt: skip
    model, seconds = train(recipe)
    acc = accuracy(model, held_out_task(recipe, recipe.n_held_out))
    log.info("zoo %s: trained in %.1f s, held-out accuracy %.4f", recipe.name, seconds, acc)
    meta = {"recipe": recipe.digest(), "name": recipe.name, "held_out_accuracy": acc,
            "train_seconds": seconds}  # fmt: skip
    save_entry(entry, model.cfg, model.state_dict(), model.tokenizer, meta)
    sha = json.loads((entry / "meta.json").read_text())["weights_sha256"]
    return ZooModel(recipe, model, acc, seconds, sha, cached=False)
