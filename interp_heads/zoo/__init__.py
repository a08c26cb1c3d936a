"""A ground-truth zoo: small transformers trained here on tasks whose mechanism is known, every
head subset evaluated, and the toolkit's methods scored against that truth."""
