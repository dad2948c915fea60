from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    """Webhooks: a campaign's events sent, signed, to URLs its coordinators registered. Above the
    core, below the engine: the modules that emit events register them here."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from labeling.modes import register_campaign_panel
        from webhooks.views import webhooks_panel

        register_campaign_panel(webhooks_panel)
