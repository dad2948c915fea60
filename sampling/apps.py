from django.apps import AppConfig


class SamplingConfig(AppConfig):
    """The sampling engine: what to judge next, estimates, model judges. An app for its tables
    (the modes register it with the core; see `graded.apps`)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "sampling"
    verbose_name = "Sampling engine"
