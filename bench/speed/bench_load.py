"""Cold and warm load of the embedded SmolLM2 (run by hand; writes bench/results/load.json).

Cold: an empty ``$INTERP_HEADS_CACHE`` (GGUF de-quantisation, conversion, tokenizer, cache write).
Warm: the cached safetensors + tokenizer (checksum verified). Each in a fresh process.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

from bench.common import result_path

CODE = (
    "import time; t=time.perf_counter(); from interp_heads.models.load import load_model; "
    "i=time.perf_counter(); load_model(device='cpu'); print(time.perf_counter()-i, i-t)"
)


def once(cache: str) -> tuple[float, float]:
    env = dict(os.environ, INTERP_HEADS_CACHE=cache)
    out = subprocess.run(
        [sys.executable, "-c", CODE], env=env, capture_output=True, text=True, check=True
    )
    load, imp = map(float, out.stdout.strip().splitlines()[-1].split())
    return load, imp


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        cold = once(cache)
        warm = [once(cache) for _ in range(5)]
    result = {
        "cold_load_s": cold[0],
        "warm_load_s_median": statistics.median(w[0] for w in warm),
        "warm_load_s_all": [w[0] for w in warm],
        "import_s_median": statistics.median(w[1] for w in warm),
    }
    result_path("load.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
