"""Greedy generation with the KV cache, hooks intact (and a fused attention path)."""
