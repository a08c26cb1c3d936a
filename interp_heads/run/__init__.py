"""A run folder as one typed object: :class:`Run` reads every saved artefact through the
store's bounded, link-refusing reads, with its file names from ``store.layout``;
:class:`Manifest` is its ``manifest.json``, frozen and versioned; :class:`RunWriter` writes
what the steps return, atomically, through the store."""

from interp_heads.run.folder import ARTEFACTS, PIECES, Run
from interp_heads.run.manifest import MANIFEST_VERSION, Manifest
from interp_heads.run.writer import RunWriter

__all__ = ["ARTEFACTS", "MANIFEST_VERSION", "PIECES", "Manifest", "Run", "RunWriter"]
