from django.apps import AppConfig


class GradedConfig(AppConfig):
    """Graded judging with sampling and estimates. Plugs a judging mode into the core."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "graded"
    verbose_name = "Graded judging"

    def ready(self) -> None:
        from demo.loading import register_demo
        from graded.demo import demo_graded_campaign, demo_judged_campaign
        from graded.modes import GradedMode
        from labeling.modes import register
        from labeling.sweeper import register_sweep
        from sampling import StaleJudgeRunSweep

        register(GradedMode())
        # Every live worker resumes judge runs a dead worker held (labeling.sweeper).
        register_sweep(StaleJudgeRunSweep())
        register_demo(demo_graded_campaign)
        register_demo(demo_judged_campaign)
