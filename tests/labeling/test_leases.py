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

pytestmark = pytest.mark.django_db


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
