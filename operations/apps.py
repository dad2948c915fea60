from django.apps import AppConfig


class OperationsConfig(AppConfig):
    """Operations: accounts, health, login limits, trusted proxies, `serve_with_worker`. Above the
    core (campaign memberships, the recompute pipeline's freshness), below nothing but config."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "operations"
    verbose_name = "Operations"

    def ready(self) -> None:
        from operations import checks  # noqa: F401  # registers the start-up check
