from django.apps import AppConfig


class PairwiseConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "pairwise"
    verbose_name = "Pairwise judging and top-k"
