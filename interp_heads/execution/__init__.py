"""Executors: where a sweep's masked generations run (in process, packed, Ray) and CPU threads."""
