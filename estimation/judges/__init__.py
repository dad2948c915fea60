"""Model judges next to human assessors: calibration, the judged design, its estimator, agreement.

A model (an LLM, a cross-encoder, an earlier ranker) labels most pool items cheaply; human
assessors label a sample. The judge's label ``f`` is turned into human terms by a calibration
``h(f) = E[G(y) | f]``, ``sigma(f) = sd(G(y) | f)`` (`calibration`), human labels are drawn
where ``|a| sigma`` is large (`design.judged_distribution`), and the estimate
``sum_i a_i h(f_i) + mean_k a (G(y) - h(f)) / q`` (`design.judged_estimate`) stays unbiased for
any calibration fixed before the draws. `agreement` measures how far judge and humans agree.
Formulas: the project's ``judge_assisted`` method notes (prediction-powered inference with an
importance-sampled human sample; Angelopoulos et al. 2023, Zrnic and Candes 2024).
"""

from estimation.judges.agreement import Agreement, agreement, kendall_tau
from estimation.judges.calibration import (
    MISSING,
    Calibration,
    cross_fitted_residuals,
    fit_calibration,
    grade_distributions,
    judge_classes,
    no_calibration,
)
from estimation.judges.design import (
    DEFAULT_SAFETY_SHARE,
    judged_distribution,
    judged_estimate,
    judged_terms,
    two_stage_estimate,
)

__all__ = [
    "DEFAULT_SAFETY_SHARE",
    "MISSING",
    "Agreement",
    "Calibration",
    "agreement",
    "cross_fitted_residuals",
    "fit_calibration",
    "grade_distributions",
    "judge_classes",
    "judged_distribution",
    "judged_estimate",
    "judged_terms",
    "kendall_tau",
    "no_calibration",
    "two_stage_estimate",
]
