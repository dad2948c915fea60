"""The command lines of ``python -m estimation``: one module per command."""
