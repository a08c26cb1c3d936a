"""Equality checks: that two paths (or two commits, or this toolkit and the HF model) give the same
results."""
