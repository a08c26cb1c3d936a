"""Studies: results made of several runs (``interp_heads.studies.base``), registered in
:data:`STUDIES` and run by ``interp-heads study NAME`` (:func:`run_study`). Importing the package
registers the project's own, one file each."""

from interp_heads.studies import (  # noqa: F401 (each registers its study)
    claim,
    compare,
    ground_truth,
    head_sets,
    heads,
    plain_control,
    seed_figure,
    spec_curve,
    sufficiency,
    sufficient_sets,
)
from interp_heads.studies.base import SIZES, STUDIES, Study, StudyRun
from interp_heads.studies.runner import get_study, run_study, study_config

__all__ = ["SIZES", "STUDIES", "Study", "StudyRun", "get_study", "run_study", "study_config"]
