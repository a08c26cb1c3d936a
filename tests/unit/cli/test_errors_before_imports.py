"""Bad input is one line before torch and TransformerLens are imported (a typo costs a
fraction of a second, not the seconds those imports take).

Each case runs the command line in a fresh interpreter (an import in this test process would
hide one), then reports whether torch, TransformerLens or pandas were imported."""

from __future__ import annotations

import pytest

from interp_heads.models.names import official_names
from interp_heads.models.specs import check_model_name
from tests.helpers import DATA, cli_probe

TASK = str(DATA / "tiny_echo.jsonl")


def _cases(tmp_path):
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("question,reply\nWhat?,Yes\n")
    bad_key = tmp_path / "bad.toml"
    bad_key.write_text('model = "tiny"\ntasks = ["retrieval"]\nn_rnak = 3\n')
    bad_task = tmp_path / "bad_task.toml"
    bad_task.write_text(f'model = "tiny"\ntasks = ["{tmp_path / "nosuch.jsonl"}"]\n')
    out = tmp_path / "out"
    return {
        "missing task file": (
            ["attribute", "--model", "tiny", "--task", tmp_path / "nosuch.jsonl", "--out", out],
            "no such file",
        ),
        "wrong-column CSV": (
            ["attribute", "--model", "tiny", "--task", wrong, "--out", out],
            "missing column 'prompt' (columns found: 'question', 'reply'",
        ),
        "unknown task name": (
            ["ablate", "--model", "tiny", "--task", "capitals", "--heads", "L0H1", "--out", out],
            "task 'capitals': unknown task (built-in tasks:",
        ),
        "unknown model": (
            ["attribute", "--model", "gpt-9-nonexistent", "--task", TASK, "--out", out],
            "unknown model 'gpt-9-nonexistent'",
        ),
        "bad config key": (["run", "--config", bad_key, "--out", out], "n_rnak"),
        "config naming a missing task": (
            ["run", "--config", bad_task, "--out", out],
            "no such file",
        ),
        "ranking not found": (
            [
                "ablate",
                "--model",
                "tiny",
                "--task",
                TASK,
                "--ranking",
                tmp_path / "r",
                "--out",
                out,
            ],
            "not found",
        ),
    }


@pytest.mark.parametrize(
    "case",
    ["missing task file", "wrong-column CSV", "unknown task name", "unknown model",
     "bad config key", "config naming a missing task", "ranking not found"],
)  # fmt: skip
def test_bad_input_is_one_line_before_the_heavy_imports(case, tmp_path):
    argv, said = _cases(tmp_path)[case]
    result, err = cli_probe(*argv)
    lines = err.strip().splitlines()
    assert result["code"] == 2, err
    assert len(lines) == 1 and lines[0].startswith("interp-heads: error: "), err
    assert said in lines[0], lines[0]
    assert ":0:" not in lines[0]
    assert result["heavy"] == [], f"{case}: imported {result['heavy']} before saying {lines[0]}"
    assert not (tmp_path / "out").exists()  # nothing written


def test_the_model_names_are_transformer_lens_own():
    """The names read from TransformerLens' source, without importing it, are the ones its own
    ``get_official_model_name`` accepts (checked here against TransformerLens itself)."""
    tl = pytest.importorskip("transformer_lens.loading_from_pretrained")
    names = official_names()
    assert names is not None and "gpt2" in names
    expected = {n.lower() for n in tl.OFFICIAL_MODEL_NAMES}
    expected |= {a.lower() for n in tl.OFFICIAL_MODEL_NAMES for a in tl.MODEL_ALIASES.get(n, [])}
    assert names == expected
    for name in ("gpt2", "GPT2-Small", "Qwen/Qwen2.5-0.5B", "solu-1l-pile"):
        if name.lower() in expected:
            assert tl.get_official_model_name(name)  # TransformerLens takes it: so do we
            check_model_name(name)


def test_a_model_spec_the_loader_takes_is_not_refused(tmp_path):
    """The embedded model and its aliases, ``tiny``, an existing folder or file, and (bridge) any
    path: the loader decides those."""
    from interp_heads.errors import ModelLoadError

    for spec in ("smollm2-135m", "SmolLM2-135M-Instruct", "default", "tiny", str(tmp_path)):
        check_model_name(spec)
    check_model_name("not-a-model", backend="bridge")
    with pytest.raises(ModelLoadError, match="unknown model 'not-a-model'"):
        check_model_name("not-a-model")
