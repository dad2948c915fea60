"""Failures injected at the database itself, for tests of what a failed write leaves behind."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, models


@contextmanager
def inserts_refused(model: type[models.Model], message: str) -> Iterator[None]:
    """Every INSERT into `model`'s table fails with `message` inside the block (as a full disk
    would): a temporary trigger on SQLite or PostgreSQL. It is dropped on the way out, whatever
    happened, since a transactional test's flush empties tables but keeps triggers."""
    table = connection.ops.quote_name(model._meta.db_table)
    name = f"refuse_{model._meta.db_table}_inserts"
    postgresql = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if postgresql:
            cursor.execute(
                f"CREATE FUNCTION {name}() RETURNS trigger AS $$ "
                f"BEGIN RAISE EXCEPTION '{message}'; END $$ LANGUAGE plpgsql"
            )
            cursor.execute(
                f"CREATE TRIGGER {name} BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION {name}()"
            )
        else:
            cursor.execute(
                f"CREATE TRIGGER {name} BEFORE INSERT ON {table} BEGIN SELECT RAISE(ABORT, '{message}'); END"
            )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            if postgresql:
                cursor.execute(f"DROP TRIGGER {name} ON {table}")
                cursor.execute(f"DROP FUNCTION {name}()")
            else:
                cursor.execute(f"DROP TRIGGER {name}")
