"""Ranking metrics: what a metric is, DCG/nDCG/ERR values, their exact moments under a label model."""

from estimation._moved import forward_to

# The flat module this package replaced kept its names here: `from estimation.metrics import ...`
# of the old layout still works (see estimation._moved).
__getattr__ = forward_to(__name__)
