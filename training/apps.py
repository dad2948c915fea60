from django.apps import AppConfig


class TrainingConfig(AppConfig):
    """Training-data campaigns (ELO-DCG): which (query, document) pairs to judge so that a
    learning-to-rank model improves most per label. Plugs a judging mode into the core."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "training"
    verbose_name = "Training-data campaigns"

    def ready(self) -> None:
        from demo.loading import register_demo
        from labeling.modes import register
        from training.demo import demo_training_campaign
        from training.modes import TrainingMode

        register(TrainingMode())
        register_demo(demo_training_campaign)
