"""How a page names a run folder (``store.pages.as_named``)."""

from pathlib import Path

from interp_heads.store.pages import as_named


def test_a_folder_inside_the_working_directory_is_named_relative_to_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert as_named(tmp_path / "runs" / "compare") == Path("runs/compare")
    assert as_named("runs/compare") == Path("runs/compare")  # relative already: as given
    outside = tmp_path.parent / "elsewhere"
    assert as_named(outside) == outside  # outside it: the absolute path, never "../"
