"""WSGI entry point (gunicorn config.wsgi)."""

import os

import django

from config.startup import server_or_exit
from config.token_lane import TokenLaneWSGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Fail at start-up, with the reason, rather than on every request (a bad setting, no
# collectstatic): the settings, then the checks labeling registers under its start-up tag.
server_or_exit("gunicorn")

# Django's get_wsgi_application(), with the judging API's token lane (config/token_lane.py).
django.setup(set_prefix=False)

application = TokenLaneWSGIHandler()
