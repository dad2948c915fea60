"""Quiet, helpful failures: one log line per event, no traceback for a refused request, the
site's own 404 page."""

from __future__ import annotations

import subprocess
import sys

from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from tests.conftest import PASSWORD, REPO_ROOT

LOG_EVENTS = """
import logging, django
django.setup()
try:
    raise PermissionError("no")
except PermissionError:
    logging.getLogger("django.request").warning("Forbidden: /x/", exc_info=True, extra={"status_code": 403})
try:
    raise ValueError("boom")
except ValueError:
    logger = logging.getLogger("django.request")
    logger.error("Internal Server Error: /y/", exc_info=True, extra={"status_code": 500})
"""


def test_each_event_logs_one_line_and_a_403_no_traceback() -> None:
    env = {"DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", LOG_EVENTS], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines.count("Forbidden: /x/") == 1, result.stderr
    assert lines.count("Internal Server Error: /y/") == 1, result.stderr
    assert result.stderr.count("Traceback") == 1, "only the 500 keeps its traceback"
    assert "PermissionError" not in result.stderr


def test_a_missing_page_shows_the_sites_404(assessor: AbstractBaseUser) -> None:
    client = Client()
    assert client.login(username=assessor.get_username(), password=PASSWORD)
    response = client.get("/campaigns/999999/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "Nothing here" in page and "Back to your campaigns" in page and "URLconf" not in page


def test_a_server_error_shows_the_sites_500_page(assessor: AbstractBaseUser, settings: object) -> None:
    from django.template.loader import render_to_string

    page = render_to_string("500.html")
    assert "Something went wrong on our side" in page and "favicon.svg" in page
