"""Test support: a tiny random model, planted heads, random-weight family checkpoints."""
