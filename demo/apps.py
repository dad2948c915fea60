from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo the project generates itself (`manage.py demo`): users, a collection and one
    campaign per judging mode, each registered by its mode's app (`register_demo`)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "demo"
    verbose_name = "Demo"
