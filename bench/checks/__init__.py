"""Equality checks: that two paths (or two commits) give the same results."""
