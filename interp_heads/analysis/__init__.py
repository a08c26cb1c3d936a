"""Which heads: specificity across tasks and known-head detectors."""
