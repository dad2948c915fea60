"""The audit log: sign-ins, failed sign-ins, sign-outs, scoped tokens made, used, refused and
revoked, and role changes, each with its time, user and source address.

Sign-ins and role changes are recorded from Django's signals, so every way in (the login page,
the admin, a command, an identity provider's sign-in) is logged, not only the ones this package
serves. A token's use is recorded at most once a minute per token (`operations.scoped_tokens`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from django.contrib.auth import user_logged_in, user_logged_out, user_login_failed
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.db.models.signals import m2m_changed, post_save, pre_save
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils import timezone

from labeling.csv_cells import csv_stream
from operations.models import AuditEvent

Kind = AuditEvent.Kind
# The most events one page of the API lists.
AUDIT_PAGE_LIMIT = 1000


def source_address(request: HttpRequest | None) -> str | None:
    """The client's address as the request saw it (after the trusted-proxy middleware)."""
    if request is None:
        return None
    return request.META.get("REMOTE_ADDR") or None


def audit_record(
    kind: str,
    *,
    user: User | None = None,
    username: str = "",
    source: str | None = None,
    campaign_id: int | None = None,
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    """Store one event now."""
    return AuditEvent.objects.create(
        at=timezone.now(),
        kind=kind,
        user=user,
        username=username or (user.get_username() if user is not None else ""),
        source=source,
        campaign_id=campaign_id,
        detail=detail or {},
    )


@receiver(user_logged_in, dispatch_uid="audit-sign-in")
def _signed_in(sender: Any, request: HttpRequest | None, user: User, **kwargs: Any) -> None:
    audit_record(Kind.SIGN_IN, user=user, source=source_address(request), detail=_how(request))


@receiver(user_logged_out, dispatch_uid="audit-sign-out")
def _signed_out(sender: Any, request: HttpRequest | None, user: User | None, **kwargs: Any) -> None:
    audit_record(Kind.SIGN_OUT, user=user, source=source_address(request))


@receiver(user_login_failed, dispatch_uid="audit-sign-in-failed")
def _sign_in_failed(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    # Django has already masked the password in `credentials`; only the name is kept.
    attempted = str(credentials.get("username") or "")[:150]
    audit_record(
        Kind.SIGN_IN_FAILED, username=attempted, source=source_address(request), detail=_how(request)
    )


def _how(request: HttpRequest | None) -> dict[str, Any]:
    return {"path": request.path[:200]} if request is not None else {}


@receiver(m2m_changed, sender=User.groups.through, dispatch_uid="audit-role-groups")
def _groups_changed(
    sender: Any, instance: Any, action: str, pk_set: set[int] | None, model: Any, reverse: bool, **kwargs: Any
) -> None:
    """A role is a group (labeling.permissions): a user added to or removed from one."""
    if action not in ("post_add", "post_remove", "pre_clear"):
        return
    if reverse:  # group.user_set.add(...): the instance is the group, the users are pk_set
        users = list(User.objects.filter(pk__in=pk_set) if pk_set is not None else instance.user_set.all())
        groups = [instance.name]
    else:
        users = [instance]
        groups = list(
            Group.objects.filter(pk__in=pk_set).values_list("name", flat=True)
            if pk_set is not None
            else instance.groups.values_list("name", flat=True)
        )
    if not groups:
        return
    change = "added" if action == "post_add" else "removed"
    for user in users:
        audit_record(Kind.ROLE_CHANGED, user=user, detail={change: sorted(groups)})


_ADMIN_FLAGS = ("is_superuser", "is_staff", "is_active")


@receiver(pre_save, sender=User, dispatch_uid="audit-admin-flags-before")
def _remember_flags(sender: Any, instance: User, update_fields: Any = None, **kwargs: Any) -> None:
    # A save of other fields only (the last-login time at every sign-in) changes no flag: no read.
    if instance.pk is None or (update_fields is not None and not set(update_fields) & set(_ADMIN_FLAGS)):
        return
    stored = User.objects.filter(pk=instance.pk).values(*_ADMIN_FLAGS).first()
    instance._audit_flags_before = stored  # type: ignore[attr-defined]


@receiver(post_save, sender=User, dispatch_uid="audit-admin-flags-after")
def _flags_changed(sender: Any, instance: User, created: bool, **kwargs: Any) -> None:
    """The admin role (superuser) and deactivation are flags, not groups."""
    before = getattr(instance, "_audit_flags_before", None)
    if created or before is None:
        return
    changed = {
        flag: getattr(instance, flag) for flag in _ADMIN_FLAGS if before[flag] != getattr(instance, flag)
    }
    if changed:
        audit_record(Kind.ROLE_CHANGED, user=instance, detail=changed)


def audit_events(
    *, kind: str | None = None, since: datetime | None = None, until: datetime | None = None
) -> QuerySet[AuditEvent]:
    """The events, newest first, filtered by kind and time."""
    events = AuditEvent.objects.all()
    if kind:
        events = events.filter(kind=kind)
    if since is not None:
        events = events.filter(at__gte=since)
    if until is not None:
        events = events.filter(at__lt=until)
    return events.order_by("-at", "-pk")


def audit_row(event: AuditEvent) -> dict[str, Any]:
    return {
        "id": event.pk,
        "at": event.at.isoformat(),
        "kind": event.kind,
        "username": event.username,
        "user_id": event.user_id,
        "source_address": event.source,
        "campaign_id": event.campaign_id,
        "detail": event.detail,
    }


AUDIT_CSV_COLUMNS = ("id", "at", "kind", "username", "user_id", "source_address", "campaign_id", "detail")


def audit_csv(events: Iterable[AuditEvent]) -> Iterator[str]:
    """The events as formula-safe CSV, streamed (the detail as sorted JSON, empty when none)."""

    def rows() -> Iterator[list[Any]]:
        for event in events:
            row = audit_row(event)
            row["detail"] = json.dumps(row["detail"], sort_keys=True) if row["detail"] else ""
            yield [row[column] for column in AUDIT_CSV_COLUMNS]

    return csv_stream(AUDIT_CSV_COLUMNS, rows())
