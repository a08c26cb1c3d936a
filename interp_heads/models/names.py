"""Whether a model spec can name a model, told without importing torch or TransformerLens.

The command line checks ``--model`` (and a config's ``model``) before the heavy imports
(``models.specs.check_model_name``; the hooked backend's ``check_name`` reads these), so a
typo costs a fraction of a second, not the seconds torch and TransformerLens take to import. The
official names are read from TransformerLens' own source file (its ``OFFICIAL_MODEL_NAMES`` and
``MODEL_ALIASES`` literals, parsed, never run); where that file or those literals are not found
(another TransformerLens), nothing is refused here and the loader decides, as before.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

from interp_heads.errors import ModelLoadError
from interp_heads.models.sources import EMBEDDED

_NAMES_FILE = "loading_from_pretrained.py"


def unknown_model(spec: str) -> ModelLoadError:
    """The one line for a spec that is no model (the hooked backend's loader says the same)."""
    return ModelLoadError(
        f"unknown model {spec!r}: pass {EMBEDDED!r} (embedded, offline), a TransformerLens "
        "official model name (e.g. 'gpt2', 'Qwen/Qwen2.5-0.5B'), a local Hugging Face model "
        "folder or a local .gguf file"
    )


@functools.cache
def official_names() -> frozenset[str] | None:
    """TransformerLens' official model names and aliases, lower case (it matches them so), read
    from its source; None when they cannot be read that way."""
    spec = importlib.util.find_spec("transformer_lens")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / _NAMES_FILE
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in (
                "OFFICIAL_MODEL_NAMES",
                "MODEL_ALIASES",
            ):
                try:
                    found[target.id] = ast.literal_eval(node.value)
                except ValueError:  # not a literal any more: let the loader decide
                    return None
    names, aliases = found.get("OFFICIAL_MODEL_NAMES"), found.get("MODEL_ALIASES", {})
    if not isinstance(names, list) or not isinstance(aliases, dict):
        return None
    out = {str(n).lower() for n in names}
    out |= {str(a).lower() for n in names for a in aliases.get(n, [])}
    return frozenset(out)
