"""Hand-run benchmarks, studies and equality checks (run from the repository root with
``python -m bench.<part>.<script>``); results in bench/results/."""
