"""A GGUF file is parsed once per conversion, and the shared reader reads what a fresh one reads."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

from interp_heads.models.gguf_once import parsed_once


@pytest.fixture
def small_gguf(tmp_path):
    path = tmp_path / "small.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(2)
    writer.add_token_list(["<s>", "a", "b"])
    writer.add_tensor("w", np.arange(6, dtype=np.float32).reshape(2, 3))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_one_reader_per_file_inside_and_fresh_readers_outside(small_gguf):
    original = gguf.GGUFReader
    with parsed_once() as readers:
        first = gguf.GGUFReader(small_gguf)
        assert gguf.GGUFReader(str(small_gguf)) is first and len(readers) == 1
    assert gguf.GGUFReader is original
    assert gguf.GGUFReader(small_gguf) is not first


def test_shared_reader_reads_what_a_fresh_one_reads(small_gguf):
    fresh = gguf.GGUFReader(small_gguf)
    with parsed_once():
        gguf.GGUFReader(small_gguf)  # a first reader, then the one every later caller gets
        shared = gguf.GGUFReader(small_gguf)
    assert list(shared.fields) == list(fresh.fields)
    np.testing.assert_array_equal(shared.tensors[0].data, fresh.tensors[0].data)


def test_the_reader_is_restored_when_the_block_raises(small_gguf):
    original = gguf.GGUFReader
    with pytest.raises(RuntimeError), parsed_once():
        raise RuntimeError("conversion failed")
    assert gguf.GGUFReader is original
