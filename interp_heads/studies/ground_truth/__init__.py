"""Every method scored against heads known exactly: docs/ground_truth.md from the zoo.

    interp-heads study ground_truth --size small   # the tiny zoo: runs/ground_truth_small
    interp-heads study ground_truth                # the zoo: runs/ground_truth

The study runs in this process, not through pipeline runs: for each zoo model (``zoo.recipes``)
it trains or loads the model (``zoo.cache``; refused as ground truth below its accuracy bar),
enumerates every head subset under every ablation kind (``zoo.truth``) and scores every
registered attribution method and the sufficient-set search against that truth
(``zoo.evaluate``). Each model's tables go to ``<folder>/models/<name>/`` with a ``done.json``
naming its recipe digest and weights' SHA-256 (a rerun skips a model whose entry matches); the
folder's ``manifest.json`` holds every model's recipe, weights' hash, held-out accuracy and
seconds. ``--param calibration=FILE``: the null calibration's JSON (``bench.checks.calibration``; default
the committed ``docs/calibration.json``) for the figure's third panel.

The full size also checks real weights (``zoo.real_induction``): induction on repeated random
tokens on the embedded SmolLM2, the truth the heads TransformerLens' detector and activation
patching agree on, scored against the default method's top 8 (``<folder>/real_induction.json``,
reused while its parameters match). The small size leaves it out and stays on the tiny zoo.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from interp_heads.studies.base import STUDIES, Study

FOLDERS = {"small": "ground_truth_small", "full": "ground_truth"}
N_PROMPTS = {"small": 16, "full": 64}
# induction on the embedded SmolLM2 (``zoo.real_induction``): the full size only, so the small
# study stays on the tiny zoo and fast. 8 sequences of blocks of 12: the 270 patched forward
# passes take about 5 minutes on one CPU thread (16 x 20 would take about four times that)
REAL_INDUCTION = {"full": {"n": 8, "length": 12, "seed": 0}}


@STUDIES.register
class GroundTruth(Study):
    name = "ground_truth"
    summary = "every attribution method and the sufficient-set search scored against zoo models whose heads are known exactly"

    @dataclass(frozen=True)
    class Options:
        calibration: str = field(default="docs/calibration.json", metadata={
            "help": "the calibration file bench.checks.calibration writes"})  # fmt: skip

    def runs(self, size):
        return []  # in-process (run_here)

    # one torch thread, 2026-12-07, shared machine: small from an empty cache (the tiny zoo trained
    # in it) in 0.2 CPU-minutes; full 14.9 min wall with the four zoo models cached (training
    # them adds 8.5 min: their train_seconds), SmolLM2's real-weights check 5.8 min of it
    minutes = {"small": 0.2, "full": 23.4}

    def describe(self) -> str:
        from interp_heads.zoo.recipes import SIZES as ZOO_SIZES

        sizes = ", ".join(
            f"{s}: {len(ZOO_SIZES[s])} zoo model(s) in this process, {self.minutes[s]:g} min"
            for s in ZOO_SIZES
        )
        return f"{self.name}: {self.summary} ({sizes})"

    def folders_here(self, size):
        return [FOLDERS[size]]

    def run_here(self, size, runs_dir, *, force=False, quiet=False):
        folder = Path(runs_dir) / FOLDERS[size]
        run_zoo(folder, size, force=force, quiet=quiet)
        return {FOLDERS[size]: folder}

    def write_pages(self, folders, docs):
        from interp_heads.studies.ground_truth.page import write_page

        (folder,) = folders.values()
        return write_page(Path(folder), Path(docs), Path(self.params.calibration))


def _done_record(model_dir: Path) -> dict:
    """A model's ``done.json`` (its recipe, weights and the seconds its scoring took); empty when
    absent or unreadable (the model is then redone)."""
    from interp_heads.store.readback import read_json

    path = model_dir / "done.json"
    if not path.is_file():
        return {}
    try:
        record = read_json(path)
    except Exception:  # noqa: BLE001 - unreadable: redo the model
        return {}
    return record if isinstance(record, dict) else {}


def _work_seconds(model_dir: Path) -> float:
    """The seconds a model's scoring took when it was done (0 without a readable record)."""
    seconds = _done_record(model_dir).get("seconds", 0.0)
    return float(seconds) if isinstance(seconds, int | float) else 0.0


def _done(model_dir: Path, digest: str) -> bool:
    return _done_record(model_dir).get("recipe_sha256") == digest


def run_zoo(folder: Path, size: str, *, force: bool = False, quiet: bool = False) -> None:
    """Train or load, enumerate and score every zoo model of ``size`` into ``folder``."""
    from interp_heads.errors import PipelineError
    from interp_heads.run import Manifest, RunWriter
    from interp_heads.store.atomic import write_atomic
    from interp_heads.store.files import make_folder
    from interp_heads.store.provenance import versions
    from interp_heads.studies.ground_truth.page import (
        MODELS,
        N_PROMPTS_KEY,
        REAL_INDUCTION_KEY,
        SECONDS,
        SIZE,
        STUDY,
        WORK_SECONDS,
    )
    from interp_heads.zoo.cache import zoo_model
    from interp_heads.zoo.evaluate import evaluate
    from interp_heads.zoo.induction import induction_scores
    from interp_heads.zoo.recipes import recipes

    start = time.perf_counter()
    manifest = Manifest()
    for key, value in ((STUDY, "ground_truth"), (SIZE, size), (N_PROMPTS_KEY, N_PROMPTS[size])):
        manifest = manifest.with_extra(key, value)
    manifest = manifest.with_updates(versions=versions(("torch", "transformer-lens")))
    manifest = manifest.with_extra(MODELS, {})
    writer = RunWriter(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)  # the runs folder (runner.check_folders)
    make_folder(folder.parent, folder)
    work = 0.0
    for name, recipe in recipes(size).items():
        model_dir = folder / "models" / name
        zm = zoo_model(recipe)
        entry = {**zm.manifest(), "refused": ""}
        if recipe.task == "induction":  # the known mechanism's signature: a layer-1 induction head
            entry["induction_scores"] = induction_scores(zm.model).round(4).tolist()
        try:
            zm.require_truth()
        except PipelineError as exc:
            entry["refused"] = str(exc)
        manifest = manifest.with_extra(MODELS, {**manifest.get(MODELS), name: entry})
        if entry["refused"]:
            if not quiet:
                print(entry["refused"])
        elif force or not _done(model_dir, recipe.digest()):
            if not quiet:
                print(f"ground_truth: {name} (held-out accuracy {zm.accuracy:.3f}, trained in "
                      f"{zm.train_seconds:.0f} s)", flush=True)  # fmt: skip
            began = time.perf_counter()
            tables = evaluate(zm, n_prompts=N_PROMPTS[size])
            make_folder(folder, model_dir)  # never through a link
            for table, frame in tables.items():
                write_atomic(model_dir / f"{table}.csv", frame.to_csv(index=False))
            write_atomic(model_dir / "done.json", json.dumps(
                {"recipe_sha256": recipe.digest(), "weights_sha256": zm.weights_sha256,
                 "seconds": time.perf_counter() - began}))  # fmt: skip
            if not quiet:
                print(f"ground_truth: {name} scored in {time.perf_counter() - began:.0f} s",
                      flush=True)  # fmt: skip
        # the manifest once per model, as it changes: an interrupted study still shows what it
        # finished, and the last model's write is the finished study's manifest. SECONDS: this
        # invocation; WORK_SECONDS: what every part took when it was done (a resumed study)
        work += 0.0 if entry["refused"] else _work_seconds(model_dir)
        manifest = manifest.with_extra(SECONDS, time.perf_counter() - start)
        manifest = manifest.with_extra(WORK_SECONDS, work)
        writer.manifest(manifest, sort_keys=True)
    if size in REAL_INDUCTION:  # real weights: only the full study loads SmolLM2
        real = run_real_induction(folder, REAL_INDUCTION[size], force=force, quiet=quiet)
        manifest = manifest.with_extra(REAL_INDUCTION_KEY, real)
        manifest = manifest.with_extra(SECONDS, time.perf_counter() - start)
        manifest = manifest.with_extra(WORK_SECONDS, work + real["seconds"]["total"])
    if size in REAL_INDUCTION or not manifest.get(MODELS):  # else the loop wrote the last state
        writer.manifest(manifest, sort_keys=True)


def run_real_induction(folder: Path, params: dict, *, force: bool = False,
                       quiet: bool = False) -> dict:  # fmt: skip
    """The induction check on the embedded SmolLM2 (``zoo.real_induction``) into
    ``<folder>/real_induction.json``; a rerun with the same parameters reads it back. Returns the
    manifest's entry: the parameters, the counts and the seconds."""
    from interp_heads.models.load import load_model
    from interp_heads.models.sources import EMBEDDED
    from interp_heads.store.atomic import write_atomic
    from interp_heads.store.readback import read_json
    from interp_heads.zoo.real_induction import real_induction

    path = folder / "real_induction.json"
    wanted = {"model": EMBEDDED, **params}
    result = None
    if path.is_file() and not force:
        try:
            old = read_json(path)
            result = old if all(old.get(k) == v for k, v in wanted.items()) else None
        except Exception:  # noqa: BLE001 - unreadable: redo it
            result = None
    if result is None:
        if not quiet:
            print(f"ground_truth: induction on real weights ({EMBEDDED}, {params['n']} sequences "
                  f"of blocks of {params['length']})", flush=True)  # fmt: skip
        model = load_model(EMBEDDED)
        result = {**real_induction(model, **params), "model": EMBEDDED}
        write_atomic(path, json.dumps(result, indent=1))
        if not quiet:
            print(f"ground_truth: real weights done in {result['seconds']['total']:.0f} s: "
                  f"{result['overlap']} of top-{result['k']} in the truth", flush=True)  # fmt: skip
    keep = ("model", "n", "length", "seed", "method", "overlap", "p", "overlap_detector",
            "p_detector", "seconds")  # fmt: skip
    return {k: result[k] for k in keep if k in result} | {"truth_size": len(result["truth"])}
