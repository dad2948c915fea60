"""Training-data selection: ELO-DCG expected loss, the ensembles behind it, and the selection rules."""
