"""The numeric core: metrics, exact moments under a label model, sampling distributions,
unbiased estimators with confidence intervals, cost models and a budgeted simulator.

Pure Python + numpy/scipy; never imports Django. Arrays and floats in, frozen dataclasses out.
"""

from estimation.metric_spec import Metric
from estimation.results import Estimate, Moments, SamplingDistribution

__all__ = ["Estimate", "Metric", "Moments", "SamplingDistribution"]
