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
    # a second call resumes: the model's tables are not recomputed
    done = (folder / "models" / "tiny_successor" / "truth.csv").stat().st_mtime_ns
    run_study("ground_truth", tmp_path / "runs", size="small", docs=tmp_path / "docs", quiet=True)
    assert (folder / "models" / "tiny_successor" / "truth.csv").stat().st_mtime_ns == done
