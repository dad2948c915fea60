"""HeapSort top-k: the resumable state machine, merged orders (Bradley-Terry), kappa metrics."""

from estimation._moved import forward_to

# The flat module this package replaced kept its names here: `from estimation.topk import ...`
# of the old layout still works (see estimation._moved).
__getattr__ = forward_to(__name__)
