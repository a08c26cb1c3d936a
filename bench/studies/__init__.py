"""Research studies: how methods agree and how reliable a reference is, on real models."""
