"""Fixtures shared by the pipeline's unit tests."""

from __future__ import annotations

import pytest

from interp_heads.pipeline.steps import STEPS, PipelineStep


@pytest.fixture
def register():
    """``register(step)`` adds a step to the registry for one test; it is removed afterwards."""
    added = []

    def add(step: PipelineStep) -> PipelineStep:
        STEPS.register(step)
        added.append(step.name)
        return step

    yield add
    for name in added:
        STEPS.unregister(name)
