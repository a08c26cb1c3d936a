"""Every file the tool writes, at any depth of the package, goes through the store's writer.

The scan reads every module's syntax tree (docstrings and comments do not count) for the calls
that write a file by path: ``write_text``, ``write_bytes``, ``open(..., "w"/"a"/"x"/"+")``,
``to_csv``, ``to_parquet``, ``to_json``, ``write_html``, ``write_table``, ``savefig``,
``save_pretrained``, ``save_file``, ``torch.save``, ``json.dump``, ``shutil.copy*``. A call is the
store's when it writes into a path bound in the same function by ``with atomic(...) as tmp``
(``store.atomic``) or ``with staged_folder(...) as tmp`` (``store.staging``); a call that writes no file (``to_csv(index=False)`` returns
the text) does not count; every other one must be in :data:`ALLOWED` with the reason it is safe.

:func:`staged_folder` itself is tested below: a link a library leaves in the staged folder is
refused, a link at the destination is replaced and its target untouched."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import interp_heads
from tests.helpers import refused_without_waiting

PACKAGE = Path(interp_heads.__file__).parent
WRITERS = {"write_text", "write_bytes", "to_csv", "to_parquet", "to_json", "write_html",
           "write_table", "savefig", "save_pretrained", "save_file", "save", "dump",
           "copy", "copyfile", "copy2", "copytree"}  # fmt: skip
DEST = {
    "save": 1,
    "dump": 1,
    "write_table": 1,
    "save_file": 1,
    "copy": 1,
    "copyfile": 1,
    "copy2": 1,
    "copytree": 1,
}  # else 0

# (module, call) -> why that write is the store's own or cannot be redirected
ALLOWED = {
    ("store/shared.py", "torch.save"): "writes into an in-memory BytesIO; its bytes then go "
    "through write_atomic",
    ("store/csv_cells.py", "to_csv"): "write_csv writes the path it is given; every caller "
    "gives it an atomic() temporary (store.folder.write_frame, tasks.baseline --dump)",
    ("store/folder.py", "save"): "HeadScores.save writes through write_entry / atomic()",
}


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        base = func.value.id if isinstance(func.value, ast.Name) else ""
        return f"{base}.{func.attr}" if base in ("torch", "json", "shutil") else func.attr
    return func.id if isinstance(func, ast.Name) else ""


STAGES = {"atomic", "staged_folder"}  # the store's context managers that yield a path to write


def _staged_names(scope: ast.AST) -> set[str]:
    """The names bound by ``with atomic(...) as NAME`` / ``with staged_folder(...) as NAME`` in
    ``scope`` (a function): the store's temporary paths."""
    return {
        item.optional_vars.id
        for node in ast.walk(scope)
        if isinstance(node, ast.With | ast.AsyncWith)
        for item in node.items
        if isinstance(item.context_expr, ast.Call)
        and _name(item.context_expr.func) in STAGES
        and isinstance(item.optional_vars, ast.Name)
    }


def _writes_to_tmp(node: ast.expr | None, staged: set[str]) -> bool:
    return node is not None and any(
        isinstance(n, ast.Name) and n.id in staged for n in ast.walk(node)
    )


def _destination(call: ast.Call, attr: str) -> ast.expr | None:
    i = DEST.get(attr, 0)
    if len(call.args) > i:
        return call.args[i]
    for kw in call.keywords:
        if kw.arg in ("path", "path_or_buf", "file", "f", "fp", "dst", "where", "filename",
                      "save_directory", "filepath", "fname"):  # fmt: skip
            return kw.value
    return None


def _open_mode(call: ast.Call) -> str:
    mode = call.args[1] if len(call.args) > 1 else None
    mode = next((kw.value for kw in call.keywords if kw.arg == "mode"), mode)
    return mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else "r"


def _calls(tree: ast.AST):
    """Every call with the store's temporary names of its innermost enclosing function."""

    def visit(node, staged):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            staged = staged | _staged_names(node)
        if isinstance(node, ast.Call):
            yield node, staged
        for child in ast.iter_child_nodes(node):
            yield from visit(child, staged)

    yield from visit(tree, frozenset())


def file_writes() -> list[tuple[str, int, str]]:
    """``(module, line, call)`` of every call that writes a file by path, except into a path of
    ``with atomic(...) as tmp`` / ``with staged_folder(...) as tmp``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        for call, staged in _calls(ast.parse(path.read_text())):
            name = _name(call.func)
            attr = name.split(".")[-1]
            if name == "open" or (name.endswith(".open") and name != "os.open"):
                if set(_open_mode(call)) & set("wax+"):
                    dest = call.args[0] if call.args else None
                    if not _writes_to_tmp(dest, staged):
                        found.append((module, call.lineno, "open"))
                continue
            if attr not in WRITERS or (attr == "dump" and name != "json.dump"):
                continue
            if attr in {"copy", "copyfile", "copy2", "copytree"} and not name.startswith("shutil"):
                continue
            dest = _destination(call, attr)
            if attr in ("to_csv", "to_json") and dest is None:
                continue  # returns the text, writes nothing
            if not _writes_to_tmp(dest, staged):
                found.append((module, call.lineno, name))
    return found


def test_every_file_is_written_through_the_store():
    outside = [(m, line, c) for m, line, c in file_writes() if (m, c) not in ALLOWED]
    assert outside == []


def test_the_allow_list_holds_only_live_entries():
    """An entry whose write is gone is dropped, so the list never excuses a new write."""
    live = {(m, c) for m, _, c in file_writes()}
    assert set(ALLOWED) <= live, set(ALLOWED) - live


def test_the_scan_finds_a_plain_write(tmp_path, monkeypatch):
    """The scan itself: a module writing with write_text, open("w") and to_csv(path) is found,
    the same calls into ``tmp`` are not."""
    fake = tmp_path / "pkg"
    fake.mkdir()
    (fake / "m.py").write_text(
        "def f(p, frame, tmp):\n"
        "    p.write_text('x')\n"
        "    open(p, 'w')\n"
        "    frame.to_csv(p, index=False)\n"
        "    frame.to_csv(index=False)\n"
        "    frame.to_csv(tmp)\n"  # a parameter named tmp is not the store's
        "    open(p)\n"
        "    with atomic(p) as tmp:\n"
        "        frame.to_csv(tmp)\n"
        "        open(tmp, 'wb')\n"
        "    with staged_folder(p) as tmp:\n"
        "        model.save_pretrained(tmp / 'x')\n"
    )
    monkeypatch.setattr(f"{__name__}.PACKAGE", fake)
    want = [("m.py", 2, "write_text"), ("m.py", 3, "open"), ("m.py", 4, "to_csv")]
    assert file_writes() == want  # the staged ``tmp`` of this function is not its parameter


# --------------------------------------------------------------------------- staged folders
def test_a_staged_folder_replaces_a_link_and_leaves_its_target(tmp_path):
    from interp_heads.store.staging import staged_folder

    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("precious")
    os.symlink(victim, tmp_path / "entry")
    with staged_folder(tmp_path / "entry") as tmp:
        (tmp / "weights").write_bytes(b"new")
    assert not (tmp_path / "entry").is_symlink()
    assert (tmp_path / "entry" / "weights").read_bytes() == b"new"
    assert sorted(p.name for p in victim.iterdir()) == ["precious"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry", "victim"]  # nothing staged left


def test_a_staged_folder_replaces_an_old_entry_whole(tmp_path):
    from interp_heads.store.staging import staged_folder

    (tmp_path / "entry").mkdir()
    (tmp_path / "entry" / "old").write_text("old")
    with staged_folder(tmp_path / "entry") as tmp:
        (tmp / "new").write_text("new")
    assert [p.name for p in (tmp_path / "entry").iterdir()] == ["new"]
    assert [p.name for p in tmp_path.iterdir()] == ["entry"]


def test_a_link_left_in_a_staged_folder_is_refused_and_nothing_moves(tmp_path):
    from interp_heads.store.files import UnsafeFile
    from interp_heads.store.staging import staged_folder

    (tmp_path / "entry").mkdir()
    (tmp_path / "entry" / "old").write_text("old")
    with pytest.raises(UnsafeFile, match="symbolic link"):
        with staged_folder(tmp_path / "entry") as tmp:
            (tmp / "sub").mkdir()
            os.symlink(tmp_path / "elsewhere", tmp / "sub" / "config.json")
    assert [p.name for p in (tmp_path / "entry").iterdir()] == ["old"]
    assert [p.name for p in tmp_path.iterdir()] == ["entry"]


def test_a_failed_block_leaves_the_old_entry(tmp_path):
    from interp_heads.store.staging import staged_folder

    (tmp_path / "entry").mkdir()
    with pytest.raises(RuntimeError):
        with staged_folder(tmp_path / "entry") as tmp:
            (tmp / "half").write_text("half")
            raise RuntimeError("the library failed")
    assert list((tmp_path / "entry").iterdir()) == []
    assert [p.name for p in tmp_path.iterdir()] == ["entry"]


def test_save_task_replaces_a_link_and_leaves_its_target(tmp_path):
    from interp_heads.tasks import load_task, save_task

    victim = tmp_path / "victim.jsonl"
    victim.write_text("precious")
    os.symlink(victim, tmp_path / "task.jsonl")
    task = load_task(str(Path(__file__).resolve().parents[2] / "data" / "tiny_echo.jsonl"))
    save_task(task, tmp_path / "task.jsonl")
    assert victim.read_text() == "precious" and not (tmp_path / "task.jsonl").is_symlink()
    assert len(load_task(str(tmp_path / "task.jsonl")).examples) == len(task.examples)


def test_the_calibration_is_read_bounded_and_never_through_a_link(tmp_path):
    from interp_heads.store.files import UnsafeFile
    from interp_heads.sweep.verdict import load_calibration

    real = tmp_path / "cal.json"
    real.write_text('{"rows": []}')
    assert load_calibration(real) == {"rows": []}
    os.symlink(real, tmp_path / "link.json")
    with pytest.raises(UnsafeFile, match="symbolic link"):
        load_calibration(tmp_path / "link.json")
    assert load_calibration(tmp_path / "absent.json") is None
    (tmp_path / "list.json").write_text("[1]")
    assert load_calibration(tmp_path / "list.json") is None  # not a calibration object
    os.mkfifo(tmp_path / "fifo.json")
    said = refused_without_waiting(lambda: load_calibration(tmp_path / "fifo.json"), UnsafeFile)
    assert "FIFO" in said
