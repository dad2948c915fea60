"""The learned-DCG refit in a real Celery worker process over a real Redis: answers given through
the services are refitted by the coalesced campaign recompute, without anyone calling the refit."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.contrib.auth.models import AbstractBaseUser

from sxs.models import SxsFit
from tests.sxs.oracle import answer_by_oracle, make_learning_campaign

pytestmark = [pytest.mark.servers, pytest.mark.django_db(transaction=True)]


def test_it_refits_learned_dcg_in_a_real_worker_as_answers_arrive(
    worker: Path,
    coordinator: AbstractBaseUser,
    assessor: AbstractBaseUser,
) -> None:
    campaign = make_learning_campaign(coordinator, ["alice"])
    answer_by_oracle(campaign, assessor, 25)  # each answer requests the recompute on commit

    def fitted() -> SxsFit | None:
        latest = SxsFit.objects.filter(campaign=campaign).order_by("-created_at", "-id").first()
        return latest if latest is not None and latest.answers == 25 else None

    deadline = time.monotonic() + 90
    while fitted() is None:
        assert time.monotonic() < deadline, worker.read_text(errors="replace")[-3000:]
        time.sleep(0.3)
    fit = fitted()
    assert fit.result["status"] == "fitted" and len(fit.result["gains"]) == 3
    # Coalesced: 25 answers in a burst cost a few refits, not 25.
    assert SxsFit.objects.filter(campaign=campaign).count() <= 5
    assert "campaign_refresh" in worker.read_text(errors="replace")
