"""System checks that stop a deployment which would fail on every request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core.checks import Error, register

from config.startup import STARTUP_TAG  # the web server runs the checks of this tag as it starts


@register(STARTUP_TAG, deploy=True)
def static_manifest_check(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """Hashed static files (production, `make run`) need collectstatic's manifest; without it every
    page that names a static file is a 500. (A deployment check, so `migrate` and
    `collectstatic` itself still run; the WSGI application runs it at start-up.)"""
    if not settings.STATIC_HASHED or not isinstance(staticfiles_storage, ManifestFilesMixin):
        return []
    manifest = Path(settings.STATIC_ROOT) / staticfiles_storage.manifest_name
    if manifest.is_file():
        return []
    return [
        Error(
            f"the static files manifest {manifest} is missing, so every page would fail",
            hint="run `python manage.py collectstatic --noinput` before starting the server",
            id="labeling.E001",
        )
    ]
