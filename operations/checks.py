"""The operations app's start-up checks (run by the web server with the core's, tag
`config.startup.STARTUP_TAG`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Warning, register

from config.startup import STARTUP_TAG


@register(STARTUP_TAG, deploy=True)
def trusted_proxies_check(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """A TRUSTED_PROXIES that holds every address lets any client that reaches gunicorn forge its
    address and scheme: said once at start (the WSGI application runs the checks of this tag)."""
    everyone = [entry for entry in settings.TRUSTED_PROXIES if entry.endswith("/0")]
    if not everyone:
        return []
    return [
        Warning(
            f"TRUSTED_PROXIES holds {', '.join(everyone)}: any client that reaches the server can forge "
            "X-Forwarded-For (its address for the login limits) and X-Forwarded-Proto",
            hint="list only your reverse proxies' addresses (docs/operations.md, Processes)",
            id="labeling.W001",
        )
    ]
