"""The sampling engine: strategies, estimates, planning, model judges and their runs."""
