"""The migrations describe the models: a model change without its migration would pass every
test (pytest-django builds the test database from the models) and break `make run`'s migrate."""

from __future__ import annotations

import io

from django.core.management import call_command


def test_every_model_change_has_its_migration(db: None) -> None:
    written = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=written)
    except SystemExit as exit:
        raise AssertionError(f"models changed without a migration:\n{written.getvalue()}") from exit
