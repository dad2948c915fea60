"""A refusal to start is one line, not a traceback: the settings raise ImproperlyConfigured with a
clear reason (a missing SECRET_KEY, an unbound key variable), and every entry point (manage.py,
gunicorn's master process and its WSGI module, the Celery worker) prints that reason alone and
exits with status 2. A web server also runs the start-up checks (`labeling.checks`, e.g. no
collectstatic manifest) before it serves: an error among them is a refusal too."""

from __future__ import annotations

import sys

REFUSED_STATUS = 2
STARTUP_TAG = "labeling_startup"
"""The tag of the checks a web server runs before it serves (the apps register theirs with it)."""


def settings_or_exit(program: str) -> None:
    """Load the settings, or print why they are refused and exit (REFUSED_STATUS)."""
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        settings.INSTALLED_APPS  # noqa: B018  # reading one setting loads them all
    except ImproperlyConfigured as error:
        print(f"{program}: refused to start: {error}", file=sys.stderr)
        raise SystemExit(REFUSED_STATUS) from None


def server_or_exit(program: str) -> None:
    """`settings_or_exit`, then Django's set-up and the start-up checks (tag `STARTUP_TAG`):
    each error is one line and the process exits (REFUSED_STATUS); warnings are one line each.
    gunicorn's master runs it before it starts any worker (config/gunicorn.py `on_starting`), so
    a refused start stops the server rather than restarting workers that die."""
    settings_or_exit(program)
    import django
    from django.core.checks import ERROR, run_checks

    django.setup()
    problems = run_checks(tags=[STARTUP_TAG], include_deployment_checks=True)
    for problem in problems:
        hint = f" ({problem.hint})" if problem.hint else ""
        print(f"{program}: {problem.id}: {problem.msg}{hint}", file=sys.stderr)
    errors = [problem for problem in problems if problem.level >= ERROR]
    if errors:
        print(f"{program}: refused to start: {len(errors)} start-up check(s) failed", file=sys.stderr)
        raise SystemExit(REFUSED_STATUS)
