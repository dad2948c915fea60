"""The audit log: sign-ins (and failed ones, and sign-outs) through the login page, role changes
however they are made, read by admins only, filtered, and exported as formula-safe CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser, Group
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from labeling.permissions import ROLE_COORDINATOR
from operations.accounts import user_create
from operations.models import AuditEvent
from tests.conftest import PASSWORD

Api = Callable[[AbstractBaseUser | None], APIClient]


def test_sign_ins_failures_and_sign_outs_are_logged_with_their_address(assessor: AbstractBaseUser) -> None:
    client = Client(REMOTE_ADDR="192.0.2.7")
    failed = client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert failed.status_code == 200
    assert client.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).status_code == 302
    client.post("/accounts/logout/")
    assert client.post("/api/auth/token/", {"username": "alice", "password": PASSWORD}).status_code == 200
    signing = AuditEvent.objects.filter(kind__startswith="sign_").order_by("pk")
    events = list(signing.values_list("kind", "username", "source"))
    assert events == [
        ("sign_in_failed", "alice", "192.0.2.7"),
        ("sign_in", "alice", "192.0.2.7"),
        ("sign_out", "alice", "192.0.2.7"),
        ("sign_in", "alice", "192.0.2.7"),  # a password exchanged for an API token
    ]
    assert "wrong" not in str(AuditEvent.objects.get(kind="sign_in_failed").detail), "no password kept"


def test_a_role_given_and_taken_away_is_logged_however_it_is_changed(db: None) -> None:
    user = user_create(creator=None, username="dora", password=PASSWORD, role="assessor")
    coordinators = Group.objects.get(name=ROLE_COORDINATOR)
    user.groups.add(coordinators)
    coordinators.user_set.remove(user)  # from the group's side, as the admin's group page does
    user.groups.add(coordinators)
    coordinators.user_set.clear()
    user.is_superuser = True
    user.save()
    changes = [
        event.detail for event in AuditEvent.objects.filter(kind="role_changed", user=user).order_by("pk")
    ]
    assert changes == [
        {"added": ["assessor"]},
        {"added": ["coordinator"]},
        {"removed": ["coordinator"]},
        {"added": ["coordinator"]},
        {"removed": ["coordinator"]},
        {"is_superuser": True},
    ]


def test_admins_read_filter_and_export_it_and_nobody_else_does(
    api: Api, admin: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    Client(REMOTE_ADDR="198.51.100.1").post("/accounts/login/", {"username": "=cmd|x", "password": "p"})
    assert api(coordinator).get("/api/audit/").status_code == 403
    assert api(coordinator).get("/api/audit/export/").status_code == 403
    client = api(admin)
    failed = client.get("/api/audit/", {"kind": "sign_in_failed"}).json()
    assert [(row["username"], row["source_address"]) for row in failed] == [("=cmd|x", "198.51.100.1")]
    later = (timezone.now() + timedelta(minutes=1)).isoformat()
    assert client.get("/api/audit/", {"since": later}).json() == []
    assert len(client.get("/api/audit/", {"until": later}).json()) == AuditEvent.objects.count()
    bad = client.get("/api/audit/", {"since": "yesterday"})
    assert bad.status_code == 400 and "ISO 8601" in bad.content.decode()
    assert client.get("/api/audit/", {"kind": "nonsense"}).status_code == 400
    export = client.get("/api/audit/export/", {"kind": "sign_in_failed"})
    assert export["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert [(row["kind"], row["username"]) for row in rows] == [("sign_in_failed", "'=cmd|x")], "formula-safe"


def test_the_admin_lists_events_and_tokens_read_only(admin: AbstractBaseUser) -> None:
    site = Client()
    site.force_login(admin)
    Client(REMOTE_ADDR="192.0.2.9").post("/accounts/login/", {"username": "nobody", "password": "x"})
    events = site.get("/admin/operations/auditevent/")
    assert events.status_code == 200 and "failed sign-in" in events.content.decode()
    assert site.get("/admin/operations/scopedtoken/").status_code == 200
    assert site.get("/admin/operations/auditevent/add/").status_code == 403, "nobody writes the log by hand"
