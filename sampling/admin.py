"""Django admin for the sampling engine's tables."""

from django.contrib import admin

from sampling.models import (
    EstimateSnapshot,
    Judge,
    JudgeCalibration,
    JudgeCall,
    JudgeLabel,
    JudgeRun,
    JudgeVersion,
    SamplingState,
)


@admin.register(SamplingState)
class SamplingStateAdmin(admin.ModelAdmin):
    list_display = ["campaign", "version", "level", "pool_version", "updated_at"]
    readonly_fields = ["arrays"]
    list_select_related = ["campaign"]


@admin.register(EstimateSnapshot)
class EstimateSnapshotAdmin(admin.ModelAdmin):
    list_display = ["campaign", "created_at", "level", "spent", "budget", "judgments", "draws"]
    list_filter = ["campaign", "level"]
    list_select_related = ["campaign"]


@admin.register(Judge)
class JudgeAdmin(admin.ModelAdmin):
    list_display = ["name", "campaign", "kind", "model", "version", "version_date", "simulated", "created_at"]
    list_select_related = ["campaign"]
    # A judge keeps its kind (its versions, runs and labels were made by it); the kinds are the
    # engine's registry (sampling.judge_kinds), which the core does not read.
    readonly_fields = ["kind"]


@admin.register(JudgeVersion)
class JudgeVersionAdmin(admin.ModelAdmin):
    list_display = ["judge", "number", "model", "created_at"]
    list_select_related = ["judge"]


@admin.register(JudgeRun)
class JudgeRunAdmin(admin.ModelAdmin):
    list_display = [
        "judge",
        "version",
        "status",
        "pairs_total",
        "labels",
        "refusals",
        "errors",
        "cost",
        "created_at",
    ]
    list_filter = ["status"]
    list_select_related = ["judge"]


@admin.register(JudgeCall)
class JudgeCallAdmin(admin.ModelAdmin):
    list_display = ["judge", "version", "qid", "docno", "outcome", "grade", "tokens_in", "tokens_out", "cost"]
    list_filter = ["judge", "outcome"]
    list_select_related = ["judge"]
    search_fields = ["qid", "docno"]


@admin.register(JudgeLabel)
class JudgeLabelAdmin(admin.ModelAdmin):
    list_display = ["judge", "qid", "docno", "grade", "judge_class", "human_grade"]
    list_filter = ["judge"]
    list_select_related = ["judge"]
    search_fields = ["qid", "docno"]


@admin.register(JudgeCalibration)
class JudgeCalibrationAdmin(admin.ModelAdmin):
    list_display = ["campaign", "sampling_version", "judge", "created_at"]
    list_select_related = ["campaign", "judge"]
