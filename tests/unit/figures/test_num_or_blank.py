"""The pages' one "number or blank" cell formatter (``figures.escape.num_or_blank``)."""

import math

import numpy as np
import pytest

from interp_heads.figures.escape import num_or_blank


@pytest.mark.parametrize(
    ("value", "spec", "cell"),
    [
        (0.5, ".2f", "0.50"),
        (-1, ".2f", "-1.00"),  # an int where the table holds one
        (np.float32(0.125), ".3f", "0.125"),
        (12, "d", "12"),
        (float("nan"), ".2f", ""),  # a cell with n = 1 has no spread
        (np.float32(math.nan), ".2f", ""),
        (None, ".2f", ""),
    ],
)
def test_a_number_or_a_blank(value, spec, cell):
    assert num_or_blank(value, spec) == cell
