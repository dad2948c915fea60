"""Ranking metrics: what a metric is, DCG/nDCG/ERR values, their exact moments under a label model."""
