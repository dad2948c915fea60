"""The lease primitive every unit shares (labeling.leases), on graded tasks; the pair tests
cover pair tasks and top-k heaps through the services that use it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q
from django.utils import timezone

from labeling.leases import (
    lease_claim,
    lease_close,
    lease_renew,
    lease_reopen,
    lease_return,
    leases_return,
    unanswered_claimable,
)
from labeling.models import Campaign, Task

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = [pytest.mark.django_db, pytest.mark.postgresql]


def _open_task(campaign: Campaign) -> Task:
    task = Task.objects.filter(campaign=campaign, assessor__isnull=True, answered_at__isnull=True).first()
    assert task is not None, "the started campaign has queued tasks"
    return task


def test_it_lets_one_claimant_win_and_the_other_in_only_after_expiry(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    task, now = _open_task(campaign), timezone.now()
    assert lease_claim(Task, task.pk, assessor, now, 60, unanswered_claimable(now))
    assert not lease_claim(Task, task.pk, second_assessor, now, 60, unanswered_claimable(now))
    later = now + timedelta(seconds=61)
    assert lease_claim(Task, task.pk, second_assessor, later, 60, unanswered_claimable(later))
    task.refresh_from_db()
    assert task.assessor_id == second_assessor.pk and task.lease_expires_at == later + timedelta(seconds=60)


def test_it_closes_only_the_holders_unexpired_lease_once(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    task, now = _open_task(campaign), timezone.now()
    lease_claim(Task, task.pk, assessor, now, 60, unanswered_claimable(now))
    assert not lease_close(Task, task.pk, second_assessor, now), "someone else's lease"
    assert not lease_close(Task, task.pk, assessor, now + timedelta(seconds=61)), "expired"
    assert lease_close(Task, task.pk, assessor, now + timedelta(seconds=30))
    assert not lease_close(Task, task.pk, assessor, now + timedelta(seconds=31)), "a double submit"


def test_it_renews_returns_and_reopens(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    task, now = _open_task(campaign), timezone.now()
    lease_claim(Task, task.pk, assessor, now, 60, unanswered_claimable(now))
    assert lease_renew(Task, task.pk, now + timedelta(seconds=50), 60)
    task.refresh_from_db()
    assert task.lease_expires_at == now + timedelta(seconds=110)
    lease_return(Task, task.pk)
    task.refresh_from_db()
    assert (task.assessor_id, task.leased_at, task.lease_expires_at) == (None, None, None)
    lease_claim(Task, task.pk, assessor, now, 60, unanswered_claimable(now))
    lease_close(Task, task.pk, assessor, now)
    lease_reopen(Task, task.pk, assessor, now + timedelta(seconds=5), 60)
    task.refresh_from_db()
    assert task.answered_at is None and task.assessor_id == assessor.pk
    assert leases_return(Task.objects.filter(pk=task.pk)) == 1
    assert Task.objects.filter(pk=task.pk).filter(unanswered_claimable(now)).exists()


def test_it_renews_only_a_lease_its_holder_still_holds(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    # Alice read her task, her lease ran out and Bob took it: her late renewal must not extend
    # Bob's lease (the pair and heap services renew with the same condition).
    task, now = _open_task(campaign), timezone.now()
    lease_claim(Task, task.pk, assessor, now, 60, unanswered_claimable(now))
    later = now + timedelta(seconds=61)
    lease_claim(Task, task.pk, second_assessor, later, 60, unanswered_claimable(later))
    alices = Q(assessor_id=assessor.pk, answered_at__isnull=True)
    assert not lease_renew(Task, task.pk, later + timedelta(seconds=5), 60, alices)
    task.refresh_from_db()
    assert task.assessor_id == second_assessor.pk and task.lease_expires_at == later + timedelta(seconds=60)


def test_a_hidden_page_keeps_its_item_briefly_and_a_closed_one_gives_it_back(
    campaign: Campaign,
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
    outsider: AbstractBaseUser,
    api: object,
    settings: object,
) -> None:
    settings.LABELING_IDLE_LEASE_SECONDS = 90  # type: ignore[attr-defined]
    client = api(assessor)  # type: ignore[operator]
    task = client.get(f"/api/campaigns/{campaign.pk}/next/").json()["task"]
    url = f"/api/tasks/{task}/lease/"

    def expires_in() -> float:
        expiry = Task.objects.get(pk=task).lease_expires_at
        return (expiry - timezone.now()).total_seconds()

    idle = client.post(url, {"state": "idle"}, format="json")
    assert idle.status_code == 200 and idle.json() == {"task": task, "state": "idle", "held": True}
    assert 80 < expires_in() <= 90
    assert client.post(url, {"state": "active"}, format="json").json()["held"] is True
    assert campaign.lease_seconds - 10 < expires_in() <= campaign.lease_seconds
    # Someone else's report changes nothing; an outsider does not learn the item exists.
    assert api(second_assessor).post(url, {"state": "left"}, format="json").json()["held"] is False  # type: ignore[operator]
    assert api(outsider).post(url, {"state": "left"}, format="json").status_code == 404  # type: ignore[operator]
    assert Task.objects.get(pk=task).assessor_id == assessor.pk
    assert client.post(url, {"state": "asleep"}, format="json").status_code == 400
    # A closed page: navigator.sendBeacon posts a form with the CSRF token.
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(assessor)
    page = browser.get(f"/judge/{campaign.pk}/")
    token = page.cookies["csrftoken"].value
    left = browser.post(url, {"state": "left", "kind": "grade", "csrfmiddlewaretoken": token})
    assert left.status_code == 200 and left.json()["held"] is True
    returned = Task.objects.get(pk=task)
    assert returned.assessor_id is None and returned.lease_expires_at is None
    assert api(second_assessor).get(f"/api/campaigns/{campaign.pk}/next/").json()["task"] == task  # type: ignore[operator]


def test_a_reloaded_page_keeps_its_item_whatever_the_old_page_reports_late(
    campaign: Campaign, assessor: AbstractBaseUser, api: object, settings: object
) -> None:
    settings.LABELING_IDLE_LEASE_SECONDS = 90  # type: ignore[attr-defined]
    client = api(assessor)  # type: ignore[operator]
    old_page = client.get(f"/api/campaigns/{campaign.pk}/next/").json()
    # A reload: the new page is served the same item again, under a new lease.
    new_page = client.get(f"/api/campaigns/{campaign.pk}/next/").json()
    assert new_page["task"] == old_page["task"] and new_page["lease"] != old_page["lease"]
    task = new_page["task"]
    url = f"/api/tasks/{task}/lease/"
    expiry = Task.objects.get(pk=task).lease_expires_at
    # The old page's hidden-tab and closed-page reports reach the server after that.
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(assessor)
    token = browser.get(f"/judge/{campaign.pk}/").cookies["csrftoken"].value
    for state in ("idle", "left"):
        form = {"state": state, "kind": "grade", "lease": old_page["lease"], "csrfmiddlewaretoken": token}
        late = browser.post(url, form)
        assert late.status_code == 200 and late.json()["held"] is False, late.content
    held = Task.objects.get(pk=task)
    assert held.assessor_id == assessor.pk and held.lease_expires_at == expiry
    # The new page's own reports apply, again and again (a report keeps the lease it names).
    for state in ("idle", "active", "idle"):
        report = client.post(url, {"state": state, "lease": new_page["lease"]}, format="json")
        assert report.json()["held"] is True, state
    assert (Task.objects.get(pk=task).lease_expires_at - timezone.now()).total_seconds() <= 90
    left = client.post(url, {"state": "left", "lease": new_page["lease"]}, format="json")
    assert left.json()["held"] is True and Task.objects.get(pk=task).assessor_id is None
