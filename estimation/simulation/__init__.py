"""Replayed campaigns: the budget loop against an oracle, its vectorised batch and the planner."""
