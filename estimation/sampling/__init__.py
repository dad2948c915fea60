"""Sampling and estimation: the pool, query- and item-level sampling distributions, draws, the
budget loop, estimators, intervals and costs."""

from estimation._moved import forward_to

# The flat module this package replaced kept its names here: `from estimation.sampling import ...`
# of the old layout still works (see estimation._moved).
__getattr__ = forward_to(__name__)
