"""The API takes JSON types strictly (labeling.strict_json): a number is a number, a string a
string, a boolean a boolean; the wrong type is a 400 naming the field, and nothing is stored."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework import serializers
from rest_framework.test import APIClient

from labeling.models import Campaign, Judgment, JudgmentChange
from labeling.strict_json import StrictJsonMixin, json_type_problem

pytestmark = pytest.mark.django_db

Api = Callable[[AbstractBaseUser | None], APIClient]


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        (serializers.IntegerField(), "2", "expected a number, not a string"),
        (serializers.IntegerField(), True, "expected a number, not a boolean"),
        (serializers.IntegerField(), 2, None),
        (serializers.IntegerField(), 2.0, None),
        (serializers.FloatField(), "1.5", "expected a number, not a string"),
        (serializers.CharField(), 5, "expected a string, not a number"),
        (serializers.CharField(), ["a"], "expected a string, not a list"),
        (serializers.BooleanField(), "yes", "expected a boolean, not a string"),
        (serializers.BooleanField(), 1, "expected a boolean, not a number"),
        (serializers.BooleanField(), False, None),
        (serializers.ChoiceField([(1, "one"), (2, "two")]), "2", "expected a number, not a string"),
        (serializers.ChoiceField([("a", "A")]), 1, "expected a string, not a number"),
        (serializers.ChoiceField([("a", "A")]), "a", None),
        (serializers.ListField(child=serializers.FloatField()), [1, "2"], "item 1: expected a number"),
        (serializers.JSONField(), "anything", None),
        (serializers.IntegerField(allow_null=True), None, None),
    ],
)
def test_it_names_the_json_type_a_field_expected(
    field: serializers.Field, value: object, problem: str | None
) -> None:
    found = json_type_problem(field, value)
    assert (found is None) if problem is None else (found is not None and found.startswith(problem))


def _our_serializers() -> list[type]:
    for package in ("labeling", "pairwise", "sxs", "training"):
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, f"{package}."):
            if ".migrations" not in info.name and ".management" not in info.name:
                importlib.import_module(info.name)
    found, pending = [], [serializers.BaseSerializer]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] in ("labeling", "pairwise", "sxs", "training"):
            found.append(cls)
    return found


def test_every_serializer_of_ours_takes_json_types_strictly() -> None:
    ours = _our_serializers()
    assert len(ours) > 50
    lenient = [cls.__qualname__ for cls in ours if not issubclass(cls, StrictJsonMixin)]
    assert lenient == []


def test_it_refuses_a_grade_as_a_string_on_a_regrade_and_a_note_as_a_number(
    campaign: Campaign, assessor: AbstractBaseUser, api: Api
) -> None:
    client = api(assessor)
    task = client.get(f"/api/campaigns/{campaign.pk}/next/").json()["task"]
    refused = client.post(f"/api/tasks/{task}/answer/", {"grade": 1, "note": 5}, format="json")
    assert refused.status_code == 400 and refused.json() == {"note": ["expected a string, not a number"]}
    assert not Judgment.objects.exists()
    assert client.post(f"/api/tasks/{task}/answer/", {"grade": 1}, format="json").status_code == 201
    judgment = Judgment.objects.get()
    regrade = client.post(f"/api/judgments/{judgment.pk}/grade/", {"grade": "2"}, format="json")
    assert regrade.status_code == 400 and regrade.json() == {"grade": ["expected a number, not a string"]}
    judgment.refresh_from_db()
    assert judgment.grade == 1 and not JudgmentChange.objects.exists()


def test_it_refuses_archived_as_a_string_and_a_clone_name_as_a_number(
    campaign: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    client = api(coordinator)
    archive = client.post(f"/api/campaigns/{campaign.pk}/archive/", {"archived": "yes"}, format="json")
    assert archive.status_code == 400 and archive.json() == {"archived": ["expected a boolean, not a string"]}
    campaign.refresh_from_db()
    assert campaign.archived_at is None
    clone = client.post(f"/api/campaigns/{campaign.pk}/clone/", {"name": 5}, format="json")
    assert clone.status_code == 400 and clone.json() == {"name": ["expected a string, not a number"]}
    assert Campaign.objects.count() == 1
    assert (
        client.post(f"/api/campaigns/{campaign.pk}/archive/", {"archived": True}, format="json").status_code
        == 200
    )
