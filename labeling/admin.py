"""Django admin for every model, with list displays and filters."""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.text import Truncator

from labeling.models import (
    Arrival,
    AssessorPreferences,
    Campaign,
    CampaignMember,
    CampaignProgress,
    Document,
    Draw,
    Judgment,
    JudgmentChange,
    PoolItem,
    RankingEntry,
    Skip,
    System,
    Task,
    Topic,
    Verdict,
)
from labeling.services.corrections import judgment_discard

EXCERPT_CHARS = 80
"""How much of a title the admin's lists show: a title may be up to LABELING_MAX_TITLE_CHARS."""


@admin.display(description="title")
def title_excerpt(record: object) -> str:
    return Truncator(getattr(record, "title", "")).chars(EXCERPT_CHARS)


class CampaignMemberInline(admin.TabularInline):
    model = CampaignMember
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "metric",
        "goal",
        "strategy",
        "budget",
        "budget_unit",
        "overlap",
        "status",
        "created_at",
    ]
    list_filter = ["status", "strategy", "goal", "judging_mode", "budget_unit"]
    search_fields = ["name"]
    inlines = [CampaignMemberInline]
    readonly_fields = ["created_at", "updated_at"]


@admin.register(CampaignMember)
class CampaignMemberAdmin(admin.ModelAdmin):
    list_display = ["campaign", "user", "role", "added_at"]
    list_filter = ["role", "campaign"]
    search_fields = ["user__username", "campaign__name"]
    raw_id_fields = ["user"]


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ["qid", title_excerpt, "campaign", "is_stub"]
    list_filter = ["is_stub", "campaign"]
    search_fields = ["qid", "title", "description"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # The list shows excerpts of titles; long texts are read only when a topic is opened.
        return super().get_queryset(request).defer("description", "narrative")


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["docno", title_excerpt, "campaign", "length", "is_stub"]
    list_filter = ["is_stub", "campaign"]
    search_fields = ["docno", "title", "url"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # A document's text may be up to LABELING_MAX_TEXT_CHARS; the list never shows it.
        return super().get_queryset(request).defer("text")


@admin.register(System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ["name", "campaign", "filename", "created_at"]
    list_filter = ["campaign"]
    search_fields = ["name", "filename"]


@admin.register(RankingEntry)
class RankingEntryAdmin(admin.ModelAdmin):
    list_display = ["system", "topic", "document", "rank", "score"]
    list_filter = ["system__campaign", "system"]
    raw_id_fields = ["system", "topic", "document"]
    list_select_related = ["system", "topic", "document"]


@admin.register(PoolItem)
class PoolItemAdmin(admin.ModelAdmin):
    list_display = [
        "campaign",
        "topic",
        "document",
        "best_rank",
        "cost",
        "prejudged",
        "drawn",
        "drawable_after",
    ]
    list_filter = ["campaign", "prejudged", "drawn"]
    raw_id_fields = ["topic", "document"]
    list_select_related = ["campaign", "topic", "document"]


@admin.register(Arrival)
class ArrivalAdmin(admin.ModelAdmin):
    list_display = ["campaign", "system", "reference", "topup_budget", "drawable_after", "created_at"]
    list_filter = ["campaign"]
    list_select_related = ["campaign", "system", "reference"]
    raw_id_fields = ["system", "reference"]


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    """Release verdicts are read by the worker from a plan fixed before the data: shown, never
    edited here (an edit would be a rule chosen after seeing the data)."""

    list_display = [
        "campaign",
        "first",
        "second",
        "rule",
        "question",
        "margin",
        "horizon",
        "outcome",
        "decided_at",
    ]
    list_filter = ["campaign", "rule", "outcome"]
    list_select_related = ["campaign"]
    raw_id_fields = ["arrival"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a verdict comes with its arrival or campaign, its plan fixed then

    def has_change_permission(self, request: HttpRequest, obj: Verdict | None = None) -> bool:
        return False


@admin.register(Draw)
class DrawAdmin(admin.ModelAdmin):
    list_display = [
        "campaign",
        "order",
        "kind",
        "topic",
        "document",
        "propensity",
        "cost",
        "strategy",
        "created_at",
    ]
    list_filter = ["campaign", "strategy", "kind"]
    raw_id_fields = ["pool_item", "topic", "document"]
    list_select_related = ["campaign", "topic", "document"]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["id", "campaign", "order", "slot", "kind", "assessor", "lease_expires_at", "answered_at"]
    list_filter = ["campaign", "kind", ("answered_at", admin.EmptyFieldListFilter), "assessor"]
    raw_id_fields = ["draw", "pool_item", "topic", "document", "assessor"]
    list_select_related = ["campaign", "assessor"]


class JudgmentChangeInline(admin.TabularInline):
    model = JudgmentChange
    extra = 0
    can_delete = False
    readonly_fields = ["old_grade", "new_grade", "changed_by", "changed_at"]


@admin.register(AssessorPreferences)
class AssessorPreferencesAdmin(admin.ModelAdmin):
    """Each user's keyboard shortcuts: on or off, and the keys they remapped."""

    list_display = ["user", "shortcuts_enabled", "updated_at"]
    list_filter = ["shortcuts_enabled"]
    raw_id_fields = ["user"]
    list_select_related = ["user"]


@admin.register(Skip)
class SkipAdmin(admin.ModelAdmin):
    """Items assessors passed on, and why (the campaign page counts them by reason)."""

    list_display = ["campaign", "kind", "unit", "topic", "document", "assessor", "reason", "created_at"]
    list_filter = ["campaign", "reason", "kind", "assessor"]
    raw_id_fields = ["topic", "document", "assessor"]
    list_select_related = ["campaign", "topic", "document", "assessor"]


@admin.register(JudgmentChange)
class JudgmentChangeAdmin(admin.ModelAdmin):
    """Grades changed by their assessors (My judgments); the history is kept as it happened."""

    list_display = ["judgment", "old_grade", "new_grade", "changed_by", "changed_at"]
    list_filter = ["changed_by"]
    raw_id_fields = ["judgment", "changed_by"]
    readonly_fields = ["judgment", "old_grade", "new_grade", "changed_by", "changed_at"]


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    inlines = [JudgmentChangeInline]
    list_display = ["campaign", "topic", "document", "grade", "assessor", "seconds", "source", "created_at"]
    list_filter = ["campaign", "source", "grade", "assessor"]
    search_fields = ["topic__qid", "document__docno", "assessor__username"]
    raw_id_fields = ["topic", "document", "assessor", "task", "draw"]
    list_select_related = ["campaign", "topic", "document", "assessor"]

    # Deleting a judgment here puts its item back to be judged (see judgment_discard):
    # a bare delete would leave the item counted as drawn, never to be judged again.
    def delete_model(self, request: HttpRequest, obj: Judgment) -> None:
        judgment_discard(judgment=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Judgment]) -> None:
        for judgment in queryset:
            judgment_discard(judgment=judgment)


@admin.register(CampaignProgress)
class CampaignProgressAdmin(admin.ModelAdmin):
    list_display = ["campaign", "judgments", "spent", "pool_size", "drawn", "open_tasks", "recomputed_at"]
