"""What several test files share, imported as ``tests.helpers``: the repository's paths, the
command line called in-process, a folder's file digests and a headless browser for the pages'
offline rendering checks."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def cli(*argv, ignore_warnings: bool = True) -> int:
    """``interp-heads ARGV...`` in this process (arguments as strings); its exit status."""
    from interp_heads.cli import main

    with warnings.catch_warnings():
        if ignore_warnings:
            warnings.simplefilter("ignore")
        return main([str(a) for a in argv])


# the CLI in a fresh interpreter: its exit status and which heavy modules it had imported
CLI_PROBE = (
    "import sys, json\n"
    "from interp_heads.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print(json.dumps({'code': code, 'heavy': sorted(m for m in ('torch', 'transformer_lens',"
    " 'pandas') if m in sys.modules)}))\n"
)


def cli_probe(*argv, cwd=None, env=None) -> tuple[dict, str]:
    """``interp-heads ARGV...`` in a fresh interpreter (:data:`CLI_PROBE`): ``({"code",
    "heavy"}, stderr)``; ``env`` is added to this process's environment."""
    done = subprocess.run(
        [sys.executable, "-c", CLI_PROBE, *map(str, argv)], capture_output=True, text=True,
        timeout=120, cwd=cwd, env=None if env is None else {**os.environ, **env},
    )  # fmt: skip
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def refused_without_waiting(read, error: type[Exception], seconds: float = 10) -> str:
    """The message of ``error`` that ``read()`` raises, asserted to come within ``seconds``
    (a read that blocks, as one of a FIFO would, fails the assertion instead of the test hanging)."""
    outcome: list[str] = []

    def attempt():
        try:
            read()
        except error as exc:
            outcome.append(str(exc))

    reader = threading.Thread(target=attempt, daemon=True)
    reader.start()
    reader.join(seconds)
    assert not reader.is_alive() and outcome, f"no {error.__name__} within {seconds} s"
    return outcome[0]


TINY_CONFIG = (DATA / "tiny.toml").read_text().replace("tests/data/", f"{DATA}/")  # absolute paths


def finished_run(root: Path, config: str = TINY_CONFIG) -> Path:
    """``config`` run to the end in ``root/run`` (its TOML beside it): what a refused, damaged
    or attacked command must leave as it was."""
    (root / "c.toml").write_text(config)
    assert cli("run", "--config", root / "c.toml", "--out", root / "run", "--quiet") == 0
    return root / "run"


def last_position_hooks(heads, means=None, kind: str = "mean", factor: float = 1e-4) -> list:
    """Hand-written TransformerLens ``hook_z`` hooks that rewrite ``heads`` at position -1 of
    every forward pass (zero, the head's mean from ``means[layer]``, or x ``factor``): the
    reference the toolkit's last-position masks are tested against."""
    return _hand_hooks(heads, means, kind, factor, lambda z: slice(-1, None))


def generated_position_hooks(heads, means=None, kind: str = "mean", factor: float = 1e-4) -> list:
    """As :func:`last_position_hooks`, at every pass of one new token (a KV-cached step) and
    never in the prompt's pass: the reference for masks at ``positions="generated"``."""
    return _hand_hooks(
        heads, means, kind, factor, lambda z: slice(None) if z.shape[1] == 1 else None
    )


def _hand_hooks(heads, means, kind, factor, where) -> list:
    """``hook_z`` hooks rewriting ``heads`` at the positions ``where(z)`` gives (None: none)."""

    def make(layer, hs):
        def hook(z, hook):
            at = where(z)
            if at is None:
                return z
            z = z.clone()
            for h in hs:
                if kind == "zero":
                    z[:, at, h] = 0.0
                elif kind == "mean":
                    z[:, at, h] = means[layer][h]
                else:  # scale
                    z[:, at, h] = z[:, at, h] * factor
            return z

        return hook

    by_layer: dict[int, list[int]] = {}
    for layer, h in heads:
        by_layer.setdefault(layer, []).append(h)
    return [(f"blocks.{layer}.attn.hook_z", make(layer, hs)) for layer, hs in by_layer.items()]


def snapshot(folder: Path, skip=lambda path: False) -> dict:
    """Every file under ``folder`` (but those ``skip`` names) and its SHA-256: what a refused or
    killed command must leave unchanged."""
    return {
        p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not skip(p)
    }


def chromium() -> str | None:
    """The path of an installed Chromium (or Chrome), or None."""
    return (
        shutil.which("chromium")
        or shutil.which("chromium-browser")
        or shutil.which("google-chrome")
    )


def headless(browser: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``browser`` headless, offline and with a fresh profile on ``args``."""
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tempfile.mkdtemp()}",
    ]
    return subprocess.run([browser, *flags, *args], capture_output=True, text=True, timeout=180)


def other_model_copy(run: Path, tmp: Path) -> str:
    """A copy of ``run`` whose ranking records another model (its scores file removed, so the
    manifest is what records the model)."""
    other = tmp / "other_model"
    shutil.copytree(run, other)
    shutil.rmtree(other / "attribution")
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["model"] = {"spec": "smollm2-135m", "sha256": "f" * 64, "n_layers": 30, "n_heads": 9}
    (other / "manifest.json").write_text(json.dumps(manifest))
    return str(other)


# a lead every prompt can share: 28 bytes, the byte tokenizer's 28 tokens (generation.shared_start)
SHARED_LEAD = "You are careful; answer. Q: "


def shared_start_spy(monkeypatch) -> list[int]:
    """The shared lead of each batch that read one, its length in tokens
    (``generation.shared_start``; the hooked cache's ``start_shared`` counted)."""
    from interp_heads.models.backends.hooked import _HookedCache

    seen: list[int] = []
    real = _HookedCache.start_shared

    def start_shared(self, lead, rest, rest_mask):
        seen.append(lead.shape[1])
        return real(self, lead, rest, rest_mask)

    monkeypatch.setattr(_HookedCache, "start_shared", start_shared)
    return seen


def planted_head_first(monkeypatch, model) -> int:
    """Make the head search try the planted model's successor head first among the heads it
    would order by cost (``analysis.head_search._cheapest`` wrapped): the wrong order, whose
    result a patient search and the 1-minimality pass must mend. Returns the head's index."""
    from interp_heads.analysis import head_search
    from interp_heads.testing.planted import PLANTED

    layer, head = PLANTED["successor"]
    planted = layer * model.cfg.n_heads + head
    cheapest = head_search._cheapest

    def planted_first(cost, ablated):
        order = cheapest(cost, ablated)
        return [planted, *(i for i in order if i != planted)] if planted in order else order

    monkeypatch.setattr(head_search, "_cheapest", planted_first)
    return planted
