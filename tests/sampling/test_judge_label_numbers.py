"""Judge label and calibration uploads: numbers no float can hold (a 400-digit integer as a
probability, a time or a cost) are a 400 naming file, line and field, and store nothing."""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from labeling.models import Campaign
from sampling.models import JudgeLabel

HUGE = 10**400  # json.dumps writes all 400 digits; float() of it overflows


def jsonl(name: str, *records: dict) -> io.BytesIO:
    stream = io.BytesIO("".join(json.dumps(record) + "\n" for record in records).encode())
    stream.name = name
    return stream


def huge_record(campaign: Campaign, field: str, qid: str, docid: str) -> dict:
    record: dict = {"qid": qid, "docid": docid}
    if field == "probs":
        record["probs"] = [HUGE] + [0] * (campaign.grade_count - 1)
    else:
        record["grade"] = 1
        record[field] = HUGE
    return record


@pytest.mark.parametrize("field", ["probs", "seconds", "cost"])
@pytest.mark.parametrize("upload", ["labels", "calibration"])
def test_it_refuses_a_400_digit_number_with_file_line_and_field(
    api: Callable[[AbstractBaseUser | None], APIClient],
    coordinator: AbstractBaseUser,
    campaign: Campaign,
    upload: str,
    field: str,
) -> None:
    client = api(coordinator)
    base = f"/api/campaigns/{campaign.pk}/judges/"
    judge_id = client.post(base, {"name": "j"}, format="json").json()["id"]
    good = {"qid": "70", "docid": "x", "grade": 1}
    labels = jsonl("judge.jsonl", good, huge_record(campaign, field, "70", "y"))
    if upload == "labels":
        body = {"file": labels}
    else:
        human = io.BytesIO(b"70 0 x 1\n70 0 y 0\n")
        human.name = "human.txt"
        body = {"human_qrels": human, "judge_labels": labels}
    answer = client.post(f"{base}{judge_id}/{upload}/", body, format="multipart")
    assert answer.status_code == 400, answer.content
    (error,) = answer.json()["errors"]
    assert (error["file"], error["line"]) == ("judge.jsonl", 2)
    named = "probability" if field == "probs" else f'"{field}"'
    assert f"{named} 10000000... (401 digits) is not finite" in error["message"], error
    assert not JudgeLabel.objects.exists()


def test_it_refuses_probabilities_whose_sum_no_float_holds(
    api: Callable[[AbstractBaseUser | None], APIClient], coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    client = api(coordinator)
    base = f"/api/campaigns/{campaign.pk}/judges/"
    judge_id = client.post(base, {"name": "j"}, format="json").json()["id"]
    probs = [1e308, 1e308] + [0.0] * (campaign.grade_count - 2)
    grade = "9" * 400  # a grade no float holds, shown by its length
    labels = jsonl(
        "judge.jsonl", {"qid": "1", "docid": "a", "probs": probs}, {"qid": "1", "docid": "b", "grade": 1}
    )
    answer = client.post(f"{base}{judge_id}/labels/", {"file": labels}, format="multipart")
    assert answer.status_code == 400, answer.content
    (error,) = answer.json()["errors"]
    assert error["line"] == 1 and "probabilities sum to" in error["message"], error
    qrels = io.BytesIO(f"1 0 a {grade}\n".encode())
    qrels.name = "judge.txt"
    answer = client.post(f"{base}{judge_id}/labels/", {"file": qrels}, format="multipart")
    assert answer.status_code == 400, answer.content
    (error,) = answer.json()["errors"]
    assert "grade 99999999... (400 digits) is above" in error["message"], error
    assert not JudgeLabel.objects.exists()
