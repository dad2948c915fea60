"""The admin's read-only views of scoped tokens and the audit log (tokens are made and revoked on
the campaign page or through the API, which record who did it)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from operations.models import AuditEvent, ScopedToken


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ScopedToken)
class ScopedTokenAdmin(_ReadOnly):
    list_display = (
        "name",
        "prefix",
        "campaign",
        "scopes",
        "created_by",
        "expires_at",
        "revoked_at",
        "last_used_at",
    )
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix")
    exclude = ("secret_hash",)


@admin.register(AuditEvent)
class AuditEventAdmin(_ReadOnly):
    list_display = ("at", "kind", "username", "source", "campaign", "detail")
    list_filter = ("kind",)
    search_fields = ("username", "source")
    date_hierarchy = "at"
