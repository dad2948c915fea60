"""Django admin for the graded mode's gold tables."""

from django.contrib import admin

from graded.models import GoldAnswer, GoldItem, GoldSettings


@admin.register(GoldSettings)
class GoldSettingsAdmin(admin.ModelAdmin):
    list_display = ["campaign", "share", "qualification", "min_accuracy", "min_answers"]


@admin.register(GoldItem)
class GoldItemAdmin(admin.ModelAdmin):
    list_display = ["campaign", "topic", "document", "grade", "source", "created_at"]
    list_filter = ["campaign", "source"]
    raw_id_fields = ["topic", "document"]


@admin.register(GoldAnswer)
class GoldAnswerAdmin(admin.ModelAdmin):
    list_display = ["gold", "assessor", "grade", "correct", "counted", "seconds", "created_at"]
    list_filter = ["correct", "counted", "assessor"]
    raw_id_fields = ["gold", "task", "assessor"]
