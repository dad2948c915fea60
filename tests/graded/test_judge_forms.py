"""The campaign page's judge forms: a refused add-judge form comes back with what was typed (it
was lost), and a calibration upload reports the pairs matched and the agreement on them, not
only the lines read."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from labeling.models import Campaign
from sampling import judge_create
from sampling.models import Judge


def _client(user: AbstractBaseUser) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_refused_add_judge_form_keeps_what_was_typed(
    draft_campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    prompt = "My careful prompt for [{qid}]: {query} / {nope}"
    response = _client(coordinator).post(
        reverse("graded:judge_add", args=[draft_campaign.pk]),
        {"judge-kind": "endpoint", "judge-name": "my-llm", "judge-model": "llama3.1:8b",
         "judge-base_url": "http://127.0.0.1:9/v1", "judge-prompt": prompt, "judge-concurrency": "4",
         "judge-max_tokens": "64"},
        follow=True,
    )  # fmt: skip
    page = response.content.decode()
    assert not Judge.objects.filter(campaign=draft_campaign).exists()
    assert "Judge not added" in page or "unknown field" in page
    assert 'id="add-judge" open' in page
    assert 'value="my-llm"' in page and 'value="llama3.1:8b"' in page
    assert "My careful prompt for [{qid}]: {query} / {nope}" in page
    # Shown once: the next visit has an empty form again.
    again = _client(coordinator).get(reverse("labeling:campaign_detail", args=[draft_campaign.pk]))
    assert 'value="my-llm"' not in again.content.decode()


def test_a_calibration_upload_reports_pairs_matched_and_agreement(
    draft_campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    judge = judge_create(campaign=draft_campaign, name="lenient", model="m")
    humans = "9 0 x 0\n9 0 y 1\n9 0 z 2\n9 0 w 2\n"
    labels = "9 0 x 0\n9 0 y 2\n9 0 z 2\n9 0 v 1\n"  # three pairs in both; one judge label has no human
    response = _client(coordinator).post(
        reverse("graded:judge_calibration", args=[draft_campaign.pk, judge.pk]),
        {"human_qrels": SimpleUploadedFile("humans.qrels", humans.encode()),
         "judge_labels": SimpleUploadedFile("judge.qrels", labels.encode())},
        follow=True,
    )  # fmt: skip
    page = " ".join(response.content.decode().split())
    assert "the calibration set now holds 3 pairs with both a human grade and a judge label" in page
    assert "quadratic-weighted kappa" in page and "leniency +0.33 grades" in page
