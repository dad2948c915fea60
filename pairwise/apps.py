from django.apps import AppConfig


class PairwiseConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "pairwise"
    verbose_name = "Pairwise judging and top-k"

    def ready(self) -> None:
        # The pair judging modes plug into the core's mode seam (labeling.modes).
        from demo.loading import register_demo
        from labeling.modes import register
        from pairwise.demo import demo_topk_campaign
        from pairwise.modes import PairwiseMode, TopKMode

        register(PairwiseMode())
        register(TopKMode())
        register_demo(demo_topk_campaign)
