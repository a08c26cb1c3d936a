"""The docs name only what exists: every ``interp_heads.`` name imports, every file path they
give is in the repository, every bare module file name they give is one of the package's.

Files of other projects the docs quote (the Cognitive Mirrors study's, MIB's, TransformerLens')
are listed in :data:`ELSEWHERE`.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md", *ROOT.glob("notebooks/*.md")])
DOTTED = re.compile(r"(?<![.\w])interp_heads(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
PATH = re.compile(r"`([A-Za-z0-9_./-]+\.(?:py|toml|md|ipynb))`")  # the repository's files
SHORT = re.compile(r"`([a-z_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")  # `execution.packed.auto_pack_rows`
PACKAGES = {
    p.name for p in (ROOT / "interp_heads").iterdir() if p.is_dir() and p.name != "__pycache__"
}
PACKAGES |= {p.stem for p in (ROOT / "interp_heads").glob("*.py")} - {"__init__"}
FILE_TYPES = {"py", "parquet", "csv", "json", "jsonl", "html", "md", "toml", "txt", "ipynb", "png", "svg", "gguf"}  # fmt: skip
# modules of 0.1 that the docs named after they moved (CHANGELOG 0.2.0 says where to)
RETIRED = {"ablation", "packing", "batched_mask", "testing_planted", "runfolder", "sweep_checks",
           "model_cache", "ray_executor", "config_flags", "config_sections", "known_run"}  # fmt: skip
# files of other projects that the docs quote (the study's code, peers' modules)
ELSEWHERE = {
    "get_activations.py",
    "get_importance.py",
    "get_topk_tokens_by_answer.py",
    "interveners.py",
    "ablation_topk.py",
    "ablation_cot.py",
    "utils.py",
    "evaluation.py",
    "intervenable_base.py",
    "interventions.py",
    "registry.py",
    "patching.py",
    "hook_points.py",
    "direct_path_patching.py",
    "topk_sae.py",
    "ingredients.py",
    "__main__.py",
    "balanced_cot_test_data.json",
}
CHANGELOG_ONLY = ("CHANGELOG.md",)  # names what modules used to be


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def _files() -> set[str]:
    skip = {".git", ".venv", ".venv-tl4", "runs", "__pycache__"}
    return {
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*")
        if p.is_file() and not skip & set(p.relative_to(ROOT).parts)
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_name_the_docs_give_exists(page):
    text = page.read_text()
    files = _files()
    names = {Path(f).name for f in files}
    missing = [d for d in sorted(set(DOTTED.findall(text))) if not _resolves(d)]
    for short in sorted(set(SHORT.findall(text))):
        head, tail = short.split(".")[0], short.rsplit(".", 1)[-1]
        if tail in FILE_TYPES:
            continue  # a file name (`sweep.parquet`), checked as a path
        if head in RETIRED or (head in PACKAGES and not _resolves(f"interp_heads.{short}")):
            missing.append(short)
    for path in sorted(set(PATH.findall(text))):
        if "/" in path.strip("./"):
            ok = path.strip("./") in files or f"interp_heads/{path}" in files
        else:
            ok = path in names or path in ELSEWHERE
        if not ok and not path.startswith(("runs/", "my", "/")):
            missing.append(path)
    assert not missing, f"{page.name} names what does not exist: {missing}"


def test_the_docs_name_every_registered_method_and_selection():
    """README names every attribution method; docs/extending.md every built-in selection."""
    from interp_heads.attribution.methods import METHODS
    from interp_heads.interventions.selections import SELECTIONS

    readme = (ROOT / "README.md").read_text()
    extending = (ROOT / "docs" / "extending.md").read_text()
    assert [m for m in METHODS.names() if f"`{m}`" not in readme] == []
    assert [s for s in SELECTIONS.names() if f"`{s}`" not in extending] == []
