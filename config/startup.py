"""A refusal to start is one line, not a traceback: the settings raise ImproperlyConfigured with a
clear reason (a missing SECRET_KEY, an unbound key variable), and every entry point (manage.py,
gunicorn's WSGI module, the Celery worker) prints that reason alone and exits with status 2."""

from __future__ import annotations

import sys

REFUSED_STATUS = 2


def settings_or_exit(program: str) -> None:
    """Load the settings, or print why they are refused and exit (REFUSED_STATUS)."""
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        settings.INSTALLED_APPS  # noqa: B018  # reading one setting loads them all
    except ImproperlyConfigured as error:
        print(f"{program}: refused to start: {error}", file=sys.stderr)
        raise SystemExit(REFUSED_STATUS) from None
