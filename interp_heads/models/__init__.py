"""Models: loading (HookedTransformer from GGUF/HF), the converted-weights cache, backends, families."""
