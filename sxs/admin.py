from django.contrib import admin

from sxs.models import SxsAnswer, SxsFit, SxsSettings, SxsTask


@admin.register(SxsSettings)
class SxsSettingsAdmin(admin.ModelAdmin):
    list_display = ["campaign", "k", "unjudged", "selection", "random_start", "prepared_at"]


@admin.register(SxsTask)
class SxsTaskAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "campaign",
        "topic",
        "system_a",
        "system_b",
        "slot",
        "a_on_left",
        "assessor",
        "answered_at",
    ]
    raw_id_fields = ["campaign", "topic", "system_a", "system_b", "assessor"]


@admin.register(SxsAnswer)
class SxsAnswerAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "campaign",
        "topic",
        "system_a",
        "system_b",
        "shown",
        "preference",
        "assessor",
        "created_at",
    ]
    raw_id_fields = ["campaign", "task", "topic", "system_a", "system_b", "assessor"]


@admin.register(SxsFit)
class SxsFitAdmin(admin.ModelAdmin):
    list_display = ["id", "campaign", "answers", "created_at"]
    raw_id_fields = ["campaign"]
