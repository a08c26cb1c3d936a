"""Outside ``interp_heads/run/`` no code reads or writes a run manifest's key by string: it reads
``run.Manifest``'s typed fields (a study's own key: ``Manifest.get`` with a named constant) and
changes it with ``Manifest.with_updates``. The places are found by ``bench.checks.manifest_keys``
(an AST walk); the snippets below show what it flags, so this test can fail."""

from __future__ import annotations

import ast
import textwrap

import pytest

from bench.checks.manifest_keys import PACKAGE, ROOT, places, scan

# store/ is below run/ (it cannot import Manifest): its folder's two raw checks of ownership
# (``is_run_folder``: a manifest with a config digest; ``listed``: the files it lists) stay
BELOW_RUN = "interp_heads/store/folder.py"


def _flagged(code: str) -> int:
    return len(list(places(ast.parse(textwrap.dedent(code)))))


def test_no_string_key_manifest_access_outside_run():
    found = scan([PACKAGE], allowed=("interp_heads/run/", BELOW_RUN))
    assert found == [], "\n".join(f"{p}:{n}: {c}" for p, n, c in found)
    assert len(scan([ROOT / BELOW_RUN], allowed=())) <= 2  # no new one there either


@pytest.mark.parametrize(
    "code",
    [
        'manifest.get("ks")',
        'exp.manifest["steps"].append(name)',
        'exp.manifest.setdefault("stability", {})[name] = 1',
        "exp.manifest.update(plan=[])",
        'ok = "git" in self.manifest',
        'folder.read_manifest().get("files")',
        'run.need("manifest")["config"]',
        '(run.get("manifest") or {}).get("ranking")',
        'def f(r):\n    m = r["manifest"]\n    return m["status"]',
        'def f(manifests):\n    for name, m in manifests.items():\n        m["x"]\n    return 0',
    ],
)
def test_the_counter_flags_string_key_access(code):
    assert _flagged(code) == 1


@pytest.mark.parametrize(
    "code",
    [
        "manifest.steps",
        "exp.manifest = exp.manifest.with_updates(steps=[*exp.manifest.steps, name])",
        "manifest.get(MODELS)",
        'frame["manifest"]',  # a column called manifest is read, not a manifest's key
        'def f(r):\n    m = r["summary"]\n    return m["status"]',
    ],
)
def test_the_counter_passes_typed_access(code):
    assert _flagged(code) == 0
