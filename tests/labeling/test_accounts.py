"""Accounts without the admin site: `manage.py accounts` creates users with a role and campaign
memberships, lists them and deactivates them; `PATCH /api/users/{name}/` deactivates too. A
deactivated user can sign in neither with a password nor with a token."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from labeling.models import Campaign, CampaignMember
from labeling.permissions import user_role
from tests.conftest import PASSWORD


def _accounts(*args: str, stdin: str = "") -> str:
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdin", io.StringIO(stdin))
        call_command("accounts", *args, stdout=out)
    return out.getvalue()


def test_the_command_creates_users_with_roles_and_memberships(draft_campaign: Campaign) -> None:
    printed = _accounts("create", "ann", "--role", "assessor", "--campaign", str(draft_campaign.pk))
    assert f"created ann (assessor, member of campaign {draft_campaign.pk})" in printed
    password = printed.split("password (shown once): ")[1].strip()
    assert Client().login(username="ann", password=password)
    assert CampaignMember.objects.get(campaign=draft_campaign, user__username="ann").role == "assessor"
    campaign = str(draft_campaign.pk)
    _accounts(
        "create",
        "cora",
        "--role",
        "coordinator",
        "--campaign",
        campaign,
        "--password-stdin",
        stdin="a-long-pass-9z!\n",
    )
    assert Client().login(username="cora", password="a-long-pass-9z!")
    assert user_role(get_user_model().objects.get(username="cora")) == "coordinator"
    assert CampaignMember.objects.get(campaign=draft_campaign, user__username="cora").role == "coordinator"
    listed = _accounts("list")
    assert "ann\tassessor\tactive" in listed and "cora\tcoordinator\tactive" in listed


def test_the_command_refuses_bad_input_and_stores_nothing(draft_campaign: Campaign) -> None:
    with pytest.raises(CommandError, match="no campaign 99999"):
        _accounts("create", "bob", "--role", "assessor", "--campaign", "99999")
    with pytest.raises(CommandError, match="too short|too common"):
        _accounts("create", "bob", "--role", "assessor", "--password-stdin", stdin="abc\n")
    assert not get_user_model().objects.filter(username="bob").exists()
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        _accounts("deactivate", "nobody")


def test_a_deactivated_user_signs_in_neither_by_password_nor_by_token(assessor: AbstractBaseUser) -> None:
    token = Token.objects.create(user=assessor)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.get("/api/campaigns/").status_code == 200
    assert "deactivated" in _accounts("deactivate", assessor.get_username())
    assert not Client().login(username=assessor.get_username(), password=PASSWORD)
    refused = api.get("/api/campaigns/")
    assert refused.status_code == 403 and refused.json()["detail"] == "User inactive or deleted.", (
        refused.json()
    )
    _accounts("activate", assessor.get_username())
    assert api.get("/api/campaigns/").status_code == 200


def test_the_api_deactivates_within_the_roles(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, make_user: Callable[..., AbstractBaseUser]
) -> None:
    api = APIClient()
    api.force_authenticate(coordinator)
    answer = api.patch(f"/api/users/{assessor.get_username()}/", {"active": False}, format="json")
    assert answer.status_code == 200 and answer.json()["active"] is False
    other = make_user("cleo", "coordinator")
    refused = api.patch("/api/users/cleo/", {"active": False}, format="json")
    assert refused.status_code == 403 and "ask an admin" in refused.json()["detail"]
    assert get_user_model().objects.get(pk=other.pk).is_active
    assert api.patch("/api/users/nobody/", {"active": False}, format="json").status_code == 404
    as_assessor = APIClient()
    assessor.is_active = True
    assessor.save()
    as_assessor.force_authenticate(assessor)
    assert as_assessor.patch("/api/users/cleo/", {"active": False}, format="json").status_code == 403
