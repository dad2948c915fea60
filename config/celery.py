"""The Celery application; tasks are discovered in each installed app's tasks.py."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
# All CELERY_* settings live in Django's settings module.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
