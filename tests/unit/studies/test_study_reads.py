"""The study pages read their run folders only through bounded, link-refusing reads
(``store.readback``): a summary table that is a FIFO, a link or a device is one line naming the
file, never a hang or a followed link. A read that blocks fails the test (a thread's
timeout), it does not hang the suite."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from interp_heads.errors import one_line
from interp_heads.store.files import UnsafeFile
from interp_heads.studies import compare, seed_figure
from interp_heads.studies.heads import page as heads_page


def _plant(path: Path, kind: str, outside: Path) -> None:
    """``path`` made a FIFO nobody writes to, a link to a table outside, or a link to /dev/zero."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        outside.write_bytes(b"PAR1 not read")
        path.symlink_to(outside)
    else:
        path.symlink_to("/dev/zero")


def _run_folder(root: Path) -> Path:
    run = root / "run"
    run.mkdir()
    (run / "manifest.json").write_text('{"config": {}}')
    (run / "baseline.csv").write_text("task,accuracy\nNA,0.5\n")
    (run / "summary.csv").write_text("task\nNA\n")
    return run


def _within(seconds: float, read, fifo: Path) -> BaseException | None:
    """What ``read()`` raised, run in a thread given ``seconds``: a read still blocked then
    fails the test (the FIFO is then opened for writing and closed, so the thread ends)."""
    raised: list = []

    def target():
        try:
            read()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if fifo.is_fifo():
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the read blocked on a FIFO")
    return raised[0] if raised else None


READERS = {
    "compare": lambda run: compare.load(run),
    "seed figure": lambda run: seed_figure.load(run),
    "heads page": lambda run: heads_page.seed_table(run),
}


@pytest.mark.parametrize("kind", ["fifo", "link", "device"])
@pytest.mark.parametrize("reader", list(READERS))
def test_a_planted_summary_is_one_line_never_a_hang_or_a_link(reader, kind, tmp_path):
    run = _run_folder(tmp_path)
    _plant(run / "summary.parquet", kind, tmp_path / "outside.parquet")
    err = _within(30, lambda: READERS[reader](run), run / "summary.parquet")
    assert isinstance(err, UnsafeFile), repr(err)
    line = one_line(err)
    assert "summary.parquet" in line and str(err) == line and "refused" in line
