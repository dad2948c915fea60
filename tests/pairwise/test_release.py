"""A coordinator releases a top-k list whose assessor left: the next assessor continues it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from rest_framework.test import APIClient

from labeling.models import Campaign
from labeling.services.campaigns import campaign_assessors_assign
from operations.accounts import user_create
from pairwise import services
from pairwise.models import Comparison, TopKHeap
from tests.conftest import PASSWORD
from tests.pairwise.conftest import true_relevance
from tests.pairwise.helpers import answer_pending

pytestmark = pytest.mark.django_db


def _carol(campaign: Campaign) -> AbstractBaseUser:
    carol = user_create(creator=None, username="carol", password=PASSWORD, role="assessor")
    campaign_assessors_assign(campaign=campaign, usernames=["carol"])
    return carol


def _half_done(campaign: Campaign, alice: AbstractBaseUser, bob: AbstractBaseUser) -> TopKHeap:
    """Alice answers three pairs of one heap; Bob holds the other: nothing is left for a third."""
    for _ in range(3):
        assert answer_pending(campaign, alice) is not None
    assert services.pair_next(campaign=campaign, assessor=bob) is not None
    return TopKHeap.objects.get(campaign=campaign, assessor=alice)


def test_it_lets_the_next_assessor_continue_a_released_heap(
    topk_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    heap = _half_done(topk_campaign, assessor, second_assessor)
    carol = _carol(topk_campaign)
    assert services.pair_next(campaign=topk_campaign, assessor=carol) is None
    stale = services.pair_next(campaign=topk_campaign, assessor=assessor)  # on Alice's screen

    released = services.heap_release(campaign=topk_campaign, heap_id=heap.pk)
    assert released.assessor_id is None and released.judgments == 3
    # Alice's late answer is refused; her three answers stay in the heap and in the log.
    with pytest.raises(services.PairNotPending):
        services.pair_answer(task=stale, assessor=assessor, outcome="left", seconds=1.0)
    task = services.pair_next(campaign=topk_campaign, assessor=carol)
    assert task is not None and task.heap_id == heap.pk
    while answer_pending(topk_campaign, carol) is not None:
        pass
    heap.refresh_from_db()
    assert heap.done and heap.assessor_id == carol.pk
    # The finished list is the true top-3 (the oracle answered for both assessors).
    truth = sorted(heap.state["documents"], key=true_relevance, reverse=True)[:3]
    assert heap.order == truth
    answered_by = set(Comparison.objects.filter(heap_id=heap.pk).values_list("assessor__username", flat=True))
    assert answered_by == {"alice", "carol"}
    assert services.pair_next(campaign=topk_campaign, assessor=assessor) is None


def test_it_refuses_to_release_a_finished_or_unheld_heap(
    topk_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    heap = _half_done(topk_campaign, assessor, second_assessor)
    services.heap_release(campaign=topk_campaign, heap_id=heap.pk)
    with pytest.raises(ValueError, match="nobody holds"):
        services.heap_release(campaign=topk_campaign, heap_id=heap.pk)
    TopKHeap.objects.filter(pk=heap.pk).update(done=True, assessor=assessor)
    with pytest.raises(ValueError, match="finished"):
        services.heap_release(campaign=topk_campaign, heap_id=heap.pk)
    with pytest.raises(TopKHeap.DoesNotExist):
        services.heap_release(campaign=topk_campaign, heap_id=heap.pk + 1000)


def test_it_releases_through_the_api_for_coordinators_only(
    topk_campaign: Campaign,
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
    coordinator: AbstractBaseUser,
    outsider: AbstractBaseUser,
) -> None:
    heap = _half_done(topk_campaign, assessor, second_assessor)
    path = f"/api/campaigns/{topk_campaign.pk}/pairwise/heaps/{heap.pk}/release/"
    clients = {}
    for user in (assessor, coordinator, outsider):
        clients[user.get_username()] = APIClient()
        clients[user.get_username()].force_authenticate(user)
    listed = clients["carl"].get(f"/api/campaigns/{topk_campaign.pk}/pairwise/topk/").json()
    assert {row["heap"] for row in listed if row["assessor"] == "alice"} == {heap.pk}
    assert clients["alice"].post(path).status_code == 403
    assert clients["oscar"].post(path).status_code == 404
    response = clients["carl"].post(path)
    assert response.status_code == 200
    assert response.json()["heap"] == heap.pk and response.json()["assessor"] is None
    assert response.json()["judgments"] == 3
    again = clients["carl"].post(path)
    assert again.status_code == 409 and "nobody holds" in again.json()["detail"]
    missing = f"/api/campaigns/{topk_campaign.pk}/pairwise/heaps/{heap.pk + 1000}/release/"
    assert clients["carl"].post(missing).status_code == 404


def test_it_offers_a_release_button_on_the_results_page(
    topk_campaign: Campaign,
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
    coordinator: AbstractBaseUser,
) -> None:
    heap = _half_done(topk_campaign, assessor, second_assessor)
    client = Client()
    client.force_login(coordinator)
    html = client.get(f"/pairwise/{topk_campaign.pk}/results/").content.decode()
    action = f"/pairwise/{topk_campaign.pk}/heaps/{heap.pk}/release/"
    assert f'action="{action}"' in html and "last answer" in html
    followed = client.post(action, follow=True)
    assert "released; the next assessor continues" in followed.content.decode()
    assert TopKHeap.objects.get(pk=heap.pk).assessor_id is None
    # Assessors see no such button and may not post it.
    judge = Client()
    judge.force_login(assessor)
    assert judge.post(action).status_code == 403
