"""WSGI entry point (gunicorn config.wsgi)."""

import os

from django.core.management import call_command
from django.core.wsgi import get_wsgi_application

from config.startup import settings_or_exit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
settings_or_exit("gunicorn")

application = get_wsgi_application()

# Fail at start-up, with the reason, rather than on every request (e.g. no collectstatic):
# the checks labeling registers under this tag (labeling/checks.py).
call_command("check", deploy=True, tags=["labeling_startup"], fail_level="ERROR", verbosity=0)
