"""``interp-heads study ground_truth --size small`` on the tiny zoo: its folder, manifest and page."""

import json


def test_small_study_writes_tables_manifest_and_page(tiny_zoo_model, tmp_path):
    import pandas as pd

    from interp_heads.studies import run_study

    pages = run_study("ground_truth", tmp_path / "runs", size="small", docs=tmp_path / "docs",
                      quiet=True, params={"calibration": str(tmp_path / "none.csv")})  # fmt: skip
    folder = tmp_path / "runs" / "ground_truth_small"
    manifest = json.loads((folder / "manifest.json").read_text())
    entry = manifest["models"]["tiny_successor"]
    assert entry["weights_sha256"] == tiny_zoo_model.weights_sha256 and not entry["refused"]
    truth = pd.read_csv(folder / "models" / "tiny_successor" / "truth.csv")
    assert set(truth.kind) == {"zero", "mean", "position_mean", "resample", "counterfactual"}
    text = pages[0].read_text()
    assert text.startswith("# Ground truth")
    assert "not measured yet" in text and "## tiny_successor" in text
    assert entry["weights_sha256"][:16] in text
    # real weights only at full size: the small study loads no SmolLM2
    assert "Real weights" not in text and "real_induction" not in manifest
    assert not (folder / "real_induction.json").exists()
    # a second call resumes: the model's tables are not recomputed
    done = (folder / "models" / "tiny_successor" / "truth.csv").stat().st_mtime_ns
    first = json.loads((folder / "models" / "tiny_successor" / "done.json").read_text())
    page = run_study("ground_truth", tmp_path / "runs", size="small", docs=tmp_path / "docs",
                     quiet=True)[0]  # fmt: skip
    assert (folder / "models" / "tiny_successor" / "truth.csv").stat().st_mtime_ns == done
    # its time is the work done when the model was scored, not the resumed call's
    again = json.loads((folder / "manifest.json").read_text())
    assert again["work_seconds"] == first["seconds"]
    assert page.read_text().startswith("# Ground truth")


def test_the_page_gives_a_resumed_studys_work_beside_its_own_minutes():
    from interp_heads.studies.ground_truth.page import _minutes

    assert _minutes(600.0, 601.0) == "10.0 min"
    assert _minutes(600.0, None) == "10.0 min"  # made before work_seconds was recorded
    assert _minutes(1.0, 876.0) == ("14.6 min of work; this invocation 0.0 min")


def test_a_model_below_its_bar_is_refused_on_the_page_with_one_line(tmp_path, monkeypatch):
    from interp_heads.studies import run_study
    from interp_heads.zoo import recipes
    from interp_heads.zoo.train import Recipe

    monkeypatch.setenv("INTERP_HEADS_CACHE", str(tmp_path / "cache"))
    bad = Recipe("untrained", "successor", n_layers=1, n_heads=1, d_model=16, d_head=4, steps=1,
                 batch=8, n_pool=64, n_held_out=64)  # fmt: skip
    monkeypatch.setitem(recipes.SIZES, "small", {"untrained": bad})
    (page,) = run_study("ground_truth", tmp_path / "runs", size="small", docs=tmp_path / "docs",
                        quiet=True)  # fmt: skip
    refused = [line for line in page.read_text().splitlines() if line.startswith("Refused:")]
    assert len(refused) == 1 and "below its bar 0.99: refused as ground truth" in refused[0]
    manifest = json.loads((tmp_path / "runs" / "ground_truth_small" / "manifest.json").read_text())
    assert manifest["models"]["untrained"]["held_out_accuracy"] < 0.99
    assert not (tmp_path / "runs" / "ground_truth_small" / "models" / "untrained").exists()


def test_the_figure_reads_each_rules_worst_false_positive_rate_from_the_calibration(tmp_path):
    import json

    from interp_heads.studies.ground_truth.page import _calibration

    rows = [
        {"rule": "r", "kind": "a", "n": 24, "draws": 5, "fpr": 0.01},
        {"rule": "r", "kind": "b", "n": 24, "draws": 5, "fpr": 0.04},
        {"rule": "r", "kind": "b", "n": 48, "draws": 5, "fpr": 0.30},  # another n: not shown
        {"rule": "r", "kind": "power", "n": 24, "draws": 5, "effect": 1.0, "power": 0.7},
        {"rule": "r", "kind": "power", "n": 24, "draws": 5, "effect": 0.5, "power": 0.2},
    ]
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"rows": rows}))
    frame = _calibration(path)
    assert frame.drop(columns="power_trained").to_dict("records") == [
        {"rule": "r", "false_positive_rate": 0.04, "power": 0.7}
    ]
    assert frame.power_trained.isna().all()  # no trained-model rows: not measured, not 0
    rows += [
        {"rule": "r", "kind": "zoo_power", "n": 24, "draws": 5, "effect": 0.7, "power": 0.57},
        {"rule": "r", "kind": "zoo_power", "n": 24, "draws": 5, "effect": 0.5, "power": 0.15},
        {"rule": "r", "kind": "zoo_null", "n": 24, "draws": 5, "fpr": 0.05},
    ]
    path.write_text(json.dumps({"rows": rows}))
    assert _calibration(path).to_dict("records") == [
        {"rule": "r", "false_positive_rate": 0.05, "power": 0.7, "power_trained": 0.57}
    ]
    assert _calibration(tmp_path / "absent.json") is None
