"""The admin's read-only views of scoped tokens, the audit log and the accounts an identity
provider signs in as (tokens are made and revoked on the campaign page or through the API, which
record who did it; identities are made at a provider's first sign-in)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from operations.models import AuditEvent, ExternalIdentity, ScopedToken
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


@admin.register(ExternalIdentity)
class ExternalIdentityAdmin(_ReadOnly):
    list_display = ("user", "issuer", "subject", "created_at", "last_sign_in_at")
    search_fields = ("user__username", "subject")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Unlinking: the subject's next sign-in makes a new account (or is refused while the
        # old one keeps the name).
        return bool(request.user.is_superuser)
