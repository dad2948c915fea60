"""App configuration."""

from django.apps import AppConfig


class LabelingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "labeling"
    verbose_name = "Relevance labeling"

    def ready(self) -> None:
        # Every app's routes take ids as <id:...> (config.converters): registered here, before any
        # URL module can be imported, whoever imports one first (a test walking every module).
        from django.urls import register_converter
        from django.urls.converters import get_converters

        from config.converters import IdConverter

        if "id" not in get_converters():
            register_converter(IdConverter, "id")
        # Registers the PostgreSQL connection set-up (infrastructure.db) before any connection opens.
        from infrastructure import db  # noqa: F401
        from labeling import (
            checks,  # noqa: F401  (registers the system checks)
            exports,
        )
        from labeling.modes import Export, register_export
        from labeling.recompute import RecomputeSweep, recompute_sweep_grace
        from labeling.sweeper import register_sweep

        register_sweep(RecomputeSweep(grace=recompute_sweep_grace()))

        register_export(
            Export(
                "api-export-config",
                "export/config.json",
                "-config.json",
                "Configuration (JSON)",
                "application/json",
                exports.campaign_config_json,
                stream=False,
            )
        )
        register_export(
            Export(
                "api-export-skips-csv",
                "export/skips.csv",
                "-skips.csv",
                "Skipped items (CSV)",
                "text/csv",
                exports.skips_csv,
                note="who passed which item on, the reason and the note",
            )
        )
        # Every campaign reports agreement: on its answers' preferences (pair modes,
        # `JudgingMode.answer_preferences`) and on preferences inferred from grades. Its path
        # keeps the one it had when the pairwise app registered it.
        register_export(
            Export(
                "api-pairwise-export-agreement",
                "pairwise/export/agreement.json",
                "-agreement.json",
                "Assessor agreement (JSON)",
                "application/json",
                exports.campaign_agreement_json,
                stream=False,
            )
        )
