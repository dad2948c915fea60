"""The embedded default's database backend: Django's SQLite with fast polling for the write lock
(`base.py`). Settings name it as ENGINE "infrastructure.sqlite_backend"."""
