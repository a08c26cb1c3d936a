"""Speed benchmarks: timing scripts (run by hand, never timed in tests)."""
