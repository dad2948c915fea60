"""File formats: TREC runs, qrels and label files; LETOR / SVMlight feature pools."""
