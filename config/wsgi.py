"""WSGI entry point (gunicorn config.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_wsgi_application()

# Fail at start-up, with the reason, rather than on every request (e.g. no collectstatic).
from labeling.checks import refuse_to_start_on_errors  # noqa: E402  (needs the apps loaded)

refuse_to_start_on_errors()
