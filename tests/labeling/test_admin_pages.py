"""The Django admin lists every registered table, wherever its app (the engine's, the gold and
the uploads' tables moved out of the core keep their admin pages), and refuses to add a
verdict by hand (its plan is fixed with its arrival or campaign)."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_every_registered_table_has_a_list_page_and_verdicts_cannot_be_added() -> None:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "x" * 16))
    index = client.get(reverse("admin:index"))
    assert index.status_code == 200
    labels = {model._meta.app_label for model in admin.site._registry}
    assert {"labeling", "sampling", "graded", "uploads", "webhooks"} <= labels
    for model in admin.site._registry:
        meta = model._meta
        page = client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        assert page.status_code == 200, (meta.label, page.status_code)
    assert "Gold settingss" not in index.content.decode() and "Gold settings" in index.content.decode()
    assert client.get(reverse("admin:labeling_verdict_add")).status_code == 403
