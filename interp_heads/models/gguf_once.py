"""Parse a GGUF file once while transformers loads its config, tokenizer and weights.

transformers reads the whole GGUF file (every metadata field, the 49k-token vocabulary and merges
of SmolLM2 included) once for the config, twice for the tokenizer and once more for the weights:
about 4 s each on 2 CPU cores, most of a cold ``load_model``. Inside :func:`parsed_once` each
file's ``gguf.GGUFReader`` is built once and handed to every later reader of the same file. The
reader is read-only (a memory map), so sharing it cannot change what transformers builds.
"""

from __future__ import annotations

import os
from contextlib import contextmanager


@contextmanager
def parsed_once():
    """While the block runs, ``gguf.GGUFReader(path)`` returns one reader per file."""
    import gguf

    original = gguf.GGUFReader
    readers: dict[tuple[str, str], object] = {}

    def shared_reader(path, mode="r"):
        key = (os.path.realpath(os.fspath(path)), mode)
        if key not in readers:
            readers[key] = original(path, mode)
        return readers[key]

    gguf.GGUFReader = shared_reader
    try:
        yield readers
    finally:
        gguf.GGUFReader = original
        readers.clear()
