"""A run's config: typed sections, the TOML/CLI surface, input checks."""
