"""A run folder as one typed object: :class:`Run` reads every saved artefact through the
store's bounded, link-refusing reads, with its file names from ``store.layout``;
:class:`Manifest` is its ``manifest.json``, frozen and versioned; :class:`RunWriter` writes
what the steps return, atomically, through the store."""

from importlib import import_module

# imported on first use: the CLI's early checks read a ranking's size limit from run.rankings
# before pandas, torch or TransformerLens are imported
_HOMES = {"ARTEFACTS": "folder", "PIECES": "folder", "Run": "folder", "Manifest": "manifest",
          "MANIFEST_VERSION": "manifest", "RunWriter": "writer"}  # fmt: skip
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'interp_heads.run' has no attribute {name!r}")
    return getattr(import_module(f"interp_heads.run.{_HOMES[name]}"), name)
