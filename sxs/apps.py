from django.apps import AppConfig


class SxsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "sxs"
    verbose_name = "Side-by-side judging of result lists"

    def ready(self) -> None:
        # The side-by-side mode plugs into the core's mode seam (labeling.modes).
        from demo.loading import register_demo
        from labeling.modes import register
        from sxs.demo import demo_sxs_campaign
        from sxs.modes import SxsMode

        register(SxsMode())
        register_demo(demo_sxs_campaign)
