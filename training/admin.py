from django.contrib import admin

from training.models import TrainingPool, TrainingRound, TrainingSelection, TrainingSettings


@admin.register(TrainingSettings)
class TrainingSettingsAdmin(admin.ModelAdmin):
    list_display = ["campaign", "strategy", "round_size", "docs_per_query", "cutoff", "ensemble", "drawn"]


@admin.register(TrainingPool)
class TrainingPoolAdmin(admin.ModelAdmin):
    list_display = ["campaign", "pool_filename", "queries", "rows", "base_labeled", "updated_at"]
    exclude = ["pool", "test", "scores"]  # binary archives: downloads, not form fields


@admin.register(TrainingRound)
class TrainingRoundAdmin(admin.ModelAdmin):
    list_display = [
        "campaign",
        "number",
        "strategy",
        "model",
        "labels_before",
        "selected",
        "test_dcg",
        "created_at",
    ]
    list_filter = ["campaign"]


@admin.register(TrainingSelection)
class TrainingSelectionAdmin(admin.ModelAdmin):
    list_display = ["round", "order", "qid", "docid", "el_query", "el_doc", "inclusion_probability"]
    list_filter = ["round__campaign"]
    raw_id_fields = ["round", "task"]
