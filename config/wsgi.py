"""WSGI entry point (gunicorn config.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

from config.startup import server_or_exit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Fail at start-up, with the reason, rather than on every request (a bad setting, no
# collectstatic): the settings, then the checks labeling registers under its start-up tag.
server_or_exit("gunicorn")

application = get_wsgi_application()
