"""Uploads of the files IR teams already have: topics, documents, runs, qrels and prior label
probabilities, read whole and checked before anything is stored (`formats/`), then stored in short
batches (`imports.py`; runs through a staging table, `run_imports.py` and `run_import_writes.py`)
and served over the REST API (`api.py`). An app above the core: the core knows only what every
upload shares (`labeling.import_reports`) and the pool the runs feed (`labeling.services.pools`)."""
