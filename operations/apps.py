from django.apps import AppConfig


class OperationsConfig(AppConfig):
    """Operations: accounts, health, login limits, trusted proxies, scoped tokens, the audit log,
    `serve_with_worker`. Above the core (campaign memberships, the recompute pipeline's
    freshness), below nothing but config."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "operations"
    verbose_name = "Operations"

    def ready(self) -> None:
        from labeling.modes import register_campaign_panel
        from operations import audit, checks  # noqa: F401  # the audit's signals, the start-up check
        from operations.views import scoped_tokens_panel

        register_campaign_panel(scoped_tokens_panel)
