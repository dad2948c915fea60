"""Learned DCG from side-by-side answers: the fit, its solvers, preferences and the leaderboard."""
