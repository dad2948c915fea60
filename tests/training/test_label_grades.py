"""Training label uploads: a grade no 64-bit integer holds (400 digits in qrels, 1e300 in a
LETOR row) is a 400 naming file, line and reason, and the pool keeps its labels."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.services.campaigns import campaign_create
from tests.conftest import upload
from training import services
from training.models import TrainingPool

POOL = "0 qid:a 1:0.5 # docid = x\n-1 qid:a 1:0.1 # docid = y\n"


@pytest.mark.parametrize(
    ("labels", "shown"),
    [
        ("a 0 x 1\na 0 y " + "9" * 400 + "\n", "99999999... (400 digits)"),
        ("1 qid:a 1:0.5 # docid = x\n1e300 qid:a 1:0.1 # docid = y\n", "10000000... (301 digits)"),
    ],
)
def test_it_refuses_a_grade_of_hundreds_of_digits_with_the_line(
    coordinator: AbstractBaseUser,
    api: Callable,
    labels: str,
    shown: str,
) -> None:
    campaign = campaign_create(
        creator=coordinator, name="ltr", grades=["Bad", "Good"], budget=5, judging_mode="training"
    )
    services.pool_upload(campaign=campaign, files=[upload("pool.txt", POOL)])
    stream = io.BytesIO(labels.encode())
    stream.name = "labels.txt"
    response = api(coordinator).post(
        f"/api/campaigns/{campaign.pk}/training/labels/", {"file": stream}, format="multipart"
    )
    assert response.status_code == 400, response.content
    (error,) = response.json()["errors"]
    assert (error["file"], error["line"]) == ("labels.txt", 2), error
    assert f"grade {shown} is above the top grade 1" in error["message"], error
    assert services.pool_from_bytes(TrainingPool.objects.get().pool).grades.tolist() == [0, -1]
