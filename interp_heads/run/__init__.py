"""A run folder as one typed object: :class:`Run` reads every saved artefact through the
store's bounded, link-refusing reads, with its file names from ``store.layout``;
:class:`Manifest` is its ``manifest.json``, frozen and versioned."""

from interp_heads.run.folder import ARTEFACTS, PIECES, Run
from interp_heads.run.manifest import MANIFEST_VERSION, Manifest

__all__ = ["ARTEFACTS", "MANIFEST_VERSION", "PIECES", "Manifest", "Run"]
