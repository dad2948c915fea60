"""What every app shares below the core and needs only Django: the database backends
(`sqlite_backend/`, the embedded default's SQLite engine whose writers poll for the lock) and
the connection helpers (`db.py`: prepared statements on PostgreSQL, short upload writes)."""
