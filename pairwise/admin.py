from django.contrib import admin

from pairwise.models import Comparison, PairTask, PairwiseSettings, TopKHeap


@admin.register(PairwiseSettings)
class PairwiseSettingsAdmin(admin.ModelAdmin):
    list_display = ["campaign", "k", "documents_per_topic", "use_prior_order", "prepared_at"]


@admin.register(TopKHeap)
class TopKHeapAdmin(admin.ModelAdmin):
    list_display = ["campaign", "topic", "slot", "assessor", "judgments", "done", "lease_expires_at"]
    list_filter = ["done"]
    raw_id_fields = ["campaign", "topic", "assessor"]


@admin.register(PairTask)
class PairTaskAdmin(admin.ModelAdmin):
    list_display = ["id", "campaign", "topic", "left", "right", "swapped", "assessor", "answered_at"]
    raw_id_fields = ["campaign", "topic", "heap", "left", "right", "assessor"]


@admin.register(Comparison)
class ComparisonAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "campaign",
        "topic",
        "left",
        "right",
        "outcome",
        "assessor",
        "seconds",
        "created_at",
    ]
    list_filter = ["outcome"]
    raw_id_fields = ["campaign", "topic", "task", "heap", "left", "right", "assessor"]
