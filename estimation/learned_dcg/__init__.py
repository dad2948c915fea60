"""Learned DCG from side-by-side answers: the fit, its solvers, preferences and the leaderboard."""

from estimation._moved import forward_to

# The flat module this package replaced kept its names here: `from estimation.learned_dcg import ...`
# of the old layout still works (see estimation._moved).
__getattr__ = forward_to(__name__)
