"""The distribution functions the estimators need (normal, Student t, chi-squared), computed with
the scipy.special functions that scipy.stats itself calls for them.

Why not scipy.stats: importing it takes about a second of CPU (it loads scipy.optimize,
scipy.spatial and scipy.linalg), and every Django process imports the numeric core at start
(models and services import it), so every web worker, Celery worker and management command paid
that second, most of them for nothing. scipy.special imports in a quarter of that. The values are
the same (tests/estimation/test_distributions.py compares them with scipy.stats).
"""

from __future__ import annotations

import math
from typing import TypeVar, cast

import numpy as np
from scipy.special import chdtrc, ndtr, ndtri, stdtrit

_SQRT_TWO_PI = math.sqrt(2.0 * math.pi)

# A float in, a float out; an array in, an array out (as scipy.stats takes them).
Values = TypeVar("Values", float, np.ndarray)


def normal_cdf(x: Values) -> Values:
    """P(Z <= x) for a standard normal Z."""
    return ndtr(x)


def normal_sf(x: Values) -> Values:
    """P(Z > x): the upper tail, exact far out where 1 - cdf would round to 0."""
    return ndtr(np.negative(x))


def normal_ppf(p: Values) -> Values:
    """The quantile: z with P(Z <= z) = p."""
    return ndtri(p)


def normal_isf(p: Values) -> Values:
    """The upper quantile: z with P(Z > z) = p."""
    return np.negative(ndtri(p))


def normal_pdf(x: Values, scale: float = 1.0) -> Values:
    """The density of a centred normal with standard deviation `scale`."""
    z = np.divide(x, scale)  # a float stays a (numpy) float, as from scipy.stats
    return cast(Values, np.exp(-0.5 * z * z) / (_SQRT_TWO_PI * scale))


def student_t_ppf(p: Values, df: float | np.ndarray) -> Values:
    """The quantile of Student's t with `df` degrees of freedom."""
    return stdtrit(df, p)


def student_t_isf(p: Values, df: float | np.ndarray) -> Values:
    """The upper quantile: t with P(T > t) = p."""
    return np.negative(stdtrit(df, p))


def chi2_sf(x: Values, df: float | np.ndarray) -> Values:
    """P(X > x) for a chi-squared X with `df` degrees of freedom."""
    return chdtrc(df, x)
