"""The admin's read-only views of scoped tokens and the audit log (tokens are made and revoked on
the campaign page or through the API, which record who did it)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from operations.models import AuditEvent, ScopedToken
from operations.scoped_tokens import scoped_token_state


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
        "state",
        "created_by",
        "expires_at",
        "last_used_at",
    )
    search_fields = ("name", "prefix")
    # The hash is no one's to read; the rate window is the limit's bookkeeping.
    exclude = ("secret_hash", "window_minute", "window_requests")

    @admin.display(description="state")
    def state(self, token: ScopedToken) -> str:
        return scoped_token_state(token)


@admin.register(AuditEvent)
class AuditEventAdmin(_ReadOnly):
    list_display = ("when", "kind", "username", "source", "campaign", "detail")
    list_filter = ("kind",)
    search_fields = ("username", "source")
    date_hierarchy = "at"

    @admin.display(description="time (UTC)", ordering="at")
    def when(self, event: AuditEvent) -> str:
        return f"{event.at:%Y-%m-%d %H:%M:%S}"
