"""The offline ZIP's README names every file the archive holds, the model judges' files too."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable

from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from labeling.models import Campaign
from labeling.services.campaigns import campaign_update
from sampling import judge_create, judge_labels_import
from tests.conftest import upload


def test_the_readme_names_every_file_including_the_judges(
    draft_campaign: Campaign, coordinator: AbstractBaseUser, api: Callable[[AbstractBaseUser], APIClient]
) -> None:
    campaign_update(campaign=draft_campaign, strategy="judged")
    judge = judge_create(campaign=draft_campaign, name="lenient", model="m")
    labels = "".join(f"{q} 0 d{q}-{d} 1\n" for q in (1, 2, 3) for d in range(1, 8))
    judge_labels_import(judge=judge, files=[upload("judge.txt", labels)])
    response = api(coordinator).get(f"/api/campaigns/{draft_campaign.pk}/export/offline.zip")
    assert response.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    readme = archive.read("README.txt").decode()
    described = set(re.findall(r"^(\S+)\s", readme, flags=re.MULTILINE))
    names = {name for name in archive.namelist() if name != "README.txt"}
    assert {"judges.json", "judge-labels.csv", "judged-sample.csv"} <= names
    for name in names:
        # runs/<system>.run and estimates.json/.csv are described by their pattern.
        stem = "runs/<system>.run" if name.startswith("runs/") else name
        stem = "estimates.json/.csv" if name.startswith("estimates.") else stem
        assert stem in described, f"{name} is in the archive but not in its README"
