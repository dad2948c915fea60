"""Django admin for the uploads' staging table."""

from django.contrib import admin
from django.http import HttpRequest

from uploads.models import StagedRunLine


@admin.register(StagedRunLine)
class StagedRunLineAdmin(admin.ModelAdmin):
    """Read-only: rows of run imports in progress (an import deletes its own when it ends)."""

    list_display = ["import_key", "file_index", "line", "qid", "docno", "rank", "score"]
    search_fields = ["import_key"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
