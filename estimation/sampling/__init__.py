"""Sampling and estimation: the pool, query- and item-level sampling distributions, draws, the
budget loop, estimators, intervals and costs."""
