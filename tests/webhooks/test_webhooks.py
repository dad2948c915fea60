"""Webhooks (the `webhooks` app): deliveries are signed so that a receiver can verify them
as the docs say, failures are logged and retried with backoff, URLs outside the operator's
allowed hosts are refused at registration and on every redirect, and an event is recorded once."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from labeling.models import Campaign
from tests.webhooks.helpers import SECRET, Receiver
from webhooks.deliveries import BACKOFF_SECONDS, MAX_ATTEMPTS, delivery_attempt, signature_valid
from webhooks.events import event_emit
from webhooks.models import Webhook, WebhookAttempt, WebhookDelivery, WebhookEvent
from webhooks.services import webhook_add

Api = Callable[[AbstractBaseUser | None], APIClient]
# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    local = Receiver()
    yield local
    local.server.shutdown()


def _delivery(campaign: Campaign, receiver: Receiver, name: str = "arrival.decided") -> WebhookDelivery:
    webhook_add(campaign=campaign, url=receiver.url, secret=SECRET, events=[name, "judge_run.failed"])
    event = event_emit(campaign, name, f"{name}:1", {"arrival": 1, "verdict": "better"})
    assert event is not None
    return WebhookDelivery.objects.get(event=event)


def test_a_receiver_verifies_a_signed_delivery(draft_campaign: Campaign, receiver: Receiver) -> None:
    delivery = _delivery(draft_campaign, receiver)
    assert delivery_attempt(delivery.pk) == ("delivered", 0.0)
    (request,) = receiver.requests
    body, headers = request["body"], request["headers"]
    # What a receiver does with the raw body, written out here as the docs show it.
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, headers["X-Signature-256"])
    payload = json.loads(body)
    assert (
        int(headers["X-Webhook-Timestamp"]) == payload["sent_at"]
        and abs(payload["sent_at"] - time.time()) < 60
    )
    assert (payload["event"], payload["delivery"], payload["attempt"]) == ("arrival.decided", delivery.pk, 1)
    assert payload["data"] == {"arrival": 1, "verdict": "better"} and request["path"] == "/hook?team=search"
    assert headers["X-Webhook-Event"] == "arrival.decided" and headers["X-Webhook-Delivery"] == str(
        delivery.pk
    )
    assert signature_valid(SECRET, body, headers["X-Signature-256"])
    assert not signature_valid("another-secret-entirely", body, headers["X-Signature-256"])
    assert not signature_valid(SECRET, body.replace(b"better", b"worse!"), headers["X-Signature-256"])
    assert not signature_valid(SECRET, body, headers["X-Signature-256"], now=time.time() + 3600), "a replay"
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.delivered_at is not None
    (attempt,) = WebhookAttempt.objects.filter(delivery=delivery)
    assert attempt.status_code == 200 and attempt.error == "" and attempt.seconds >= 0
    assert delivery_attempt(delivery.pk) == ("skipped", 0.0), "a second task for it sends nothing"
    assert len(receiver.requests) == 1


def test_a_failing_receiver_is_retried_with_backoff_then_given_up(
    draft_campaign: Campaign, receiver: Receiver
) -> None:
    receiver.status = 500
    delivery = _delivery(draft_campaign, receiver)
    waits = []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=None)  # due now
        outcome, wait = delivery_attempt(delivery.pk)
        waits.append(wait)
        assert outcome == ("retry" if attempt < MAX_ATTEMPTS else "failed")
    assert waits == [float(seconds) for seconds in BACKOFF_SECONDS] + [0.0]
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.attempts == MAX_ATTEMPTS
    attempts = list(WebhookAttempt.objects.filter(delivery=delivery))
    assert [row.status_code for row in attempts] == [500] * MAX_ATTEMPTS
    assert all("answered 500" in row.error for row in attempts)
    assert [json.loads(request["body"])["attempt"] for request in receiver.requests] == list(range(1, 6))


def test_an_attempt_not_due_yet_is_skipped(draft_campaign: Campaign, receiver: Receiver) -> None:
    receiver.status = 503
    delivery = _delivery(draft_campaign, receiver)
    assert delivery_attempt(delivery.pk)[0] == "retry"
    assert delivery_attempt(delivery.pk) == ("skipped", 0.0), "its backoff has not passed"
    assert len(receiver.requests) == 1


def test_urls_outside_the_allowed_hosts_are_refused_at_registration_and_on_redirect(
    draft_campaign: Campaign, receiver: Receiver, settings: Any
) -> None:
    for url, reason in (
        ("http://192.0.2.1:8080/hook", "OUTBOUND_ALLOWED_HOSTS"),
        ("ftp://127.0.0.1/hook", "http:// or https://"),
        ("http://user:pw@127.0.0.1/hook", "user name or password"),
        ("http://127.0.0.1/hook#part", "fragment"),
    ):
        with pytest.raises(ValueError, match=reason):
            webhook_add(campaign=draft_campaign, url=url, secret=SECRET, events=["arrival.decided"])
    with pytest.raises(ValueError, match="16 to 200 characters"):
        webhook_add(campaign=draft_campaign, url=receiver.url, secret="short", events=["arrival.decided"])
    with pytest.raises(ValueError, match="unknown event"):
        webhook_add(campaign=draft_campaign, url=receiver.url, secret=SECRET, events=["arrival.maybe"])
    assert not Webhook.objects.exists()
    # An allowed receiver that redirects to a host the operator did not allow: the redirect is
    # checked like the first request, and nothing is sent there.
    receiver.status, receiver.location = 307, "http://192.0.2.1:9/elsewhere"
    delivery = _delivery(draft_campaign, receiver)
    assert delivery_attempt(delivery.pk)[0] == "retry"
    (attempt,) = WebhookAttempt.objects.filter(delivery=delivery)
    assert attempt.status_code is None and "refused by the outbound check" in attempt.error
    assert "OUTBOUND_ALLOWED_HOSTS" in attempt.error
    # A host the operator no longer allows is refused on the next attempt as well.
    settings.OUTBOUND_ALLOWED_HOSTS = ["192.0.2.0/24"]
    receiver.status, receiver.location = 200, ""
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=None)
    assert delivery_attempt(delivery.pk)[0] == "retry" and len(receiver.requests) == 1


def test_an_event_is_recorded_once_and_goes_to_the_webhooks_that_asked_for_it(
    draft_campaign: Campaign, receiver: Receiver
) -> None:
    asked = webhook_add(
        campaign=draft_campaign, url=receiver.url, secret=SECRET, events=["campaign.budget_spent"]
    )
    webhook_add(campaign=draft_campaign, url=receiver.url, secret=SECRET, events=["judge_run.failed"])
    first = event_emit(draft_campaign, "campaign.budget_spent", "campaign.budget_spent:100", {"budget": 100})
    again = event_emit(draft_campaign, "campaign.budget_spent", "campaign.budget_spent:100", {"budget": 100})
    assert first is not None and again is None
    assert list(WebhookDelivery.objects.values_list("webhook_id", flat=True)) == [asked.pk]
    with pytest.raises(ValueError, match="unknown webhook event"):
        event_emit(draft_campaign, "campaign.maybe", "x", {})


def test_the_api_registers_lists_and_removes_webhooks_and_never_shows_the_secret(
    api: Api,
    coordinator: AbstractBaseUser,
    assessor: AbstractBaseUser,
    draft_campaign: Campaign,
    receiver: Receiver,
) -> None:
    url = f"/api/campaigns/{draft_campaign.pk}/webhooks/"
    body = {"url": receiver.url, "secret": SECRET, "events": ["arrival.decided", "campaign.budget_spent"]}
    created = api(coordinator).post(url, body, format="json")
    assert created.status_code == 201, created.content
    row = created.json()
    assert "secret_hint" not in row and SECRET[-4:] not in created.content.decode(), "not even in part"
    refused = api(coordinator).post(url, {**body, "url": "http://192.0.2.1/hook"}, format="json")
    assert refused.status_code == 400 and "OUTBOUND_ALLOWED_HOSTS" in refused.content.decode()
    assert api(assessor).post(url, body, format="json").status_code == 404, "not a member: no such campaign"
    event_emit(draft_campaign, "arrival.decided", "arrival.decided:7", {"arrival": 7})
    delivery_attempt(WebhookDelivery.objects.get().pk)
    listed = api(coordinator).get(url).json()
    assert [hook["id"] for hook in listed] == [row["id"]] and SECRET[-4:] not in json.dumps(listed)
    (delivery,) = listed[0]["deliveries"]
    assert delivery["status"] == "delivered" and delivery["attempts"][0]["status_code"] == 200
    assert api(coordinator).delete(f"{url}{row['id']}/").status_code == 204
    assert api(coordinator).delete(f"{url}{row['id']}/").status_code == 404
    assert not Webhook.objects.exists() and WebhookEvent.objects.count() == 1


def test_the_campaign_page_adds_lists_and_removes_webhooks(
    client: Any, coordinator: AbstractBaseUser, draft_campaign: Campaign, receiver: Receiver
) -> None:
    client.force_login(coordinator)
    page = f"/campaigns/{draft_campaign.pk}/"
    assert "No webhook yet." in client.get(page).content.decode()
    refused = client.post(
        f"{page}webhooks/",
        {"url": "http://192.0.2.1/hook", "secret": SECRET, "events": ["arrival.decided"]},
        follow=True,
    )
    assert (
        "Webhook not added:" in refused.content.decode()
        and "OUTBOUND_ALLOWED_HOSTS" in refused.content.decode()
    )
    added = client.post(
        f"{page}webhooks/",
        {"url": receiver.url, "secret": SECRET, "events": ["arrival.decided"]},
        follow=True,
    )
    text = added.content.decode()
    assert "Webhook added" in text and "Nothing sent yet" in text and SECRET not in text
    receiver.status = 502
    event_emit(draft_campaign, "arrival.decided", "arrival.decided:3", {"arrival": 3})
    delivery_attempt(WebhookDelivery.objects.get().pk)
    shown = client.get(page).content.decode()
    assert "the receiver answered 502" in shown and "next try" in shown
    hook = Webhook.objects.get()
    removed = client.post(f"{page}webhooks/{hook.pk}/remove/", follow=True)
    assert "Webhook removed." in removed.content.decode() and not Webhook.objects.exists()


def test_a_trickling_receiver_costs_one_attempt_s_deadline_and_a_huge_answer_no_memory(
    draft_campaign: Campaign, settings: Any
) -> None:
    from tests.hostile_server import hostile_server, huge, trickling

    settings.WEBHOOK_ATTEMPT_SECONDS = 2
    with hostile_server(trickling(0.3)) as slow:
        webhook_add(
            campaign=draft_campaign, url=slow.url + "/hook", secret=SECRET, events=["arrival.decided"]
        )
        event_emit(draft_campaign, "arrival.decided", "arrival.decided:1", {"arrival": 1})
        started = time.monotonic()
        outcome, _ = delivery_attempt(WebhookDelivery.objects.get().pk)
        seconds = time.monotonic() - started
    # Headers came at once, the body a byte at a time: only the status is read, so it is
    # delivered at once; a receiver that trickles its headers is cut at the deadline below.
    assert outcome == "delivered" and seconds < 2 + 1, seconds
    Webhook.objects.all().delete()

    def trickled_headers(request: Any, connection: Any) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 1000:
            connection.sendall(bytes([byte]))
            time.sleep(0.3)

    with hostile_server(trickled_headers) as slower:
        webhook_add(
            campaign=draft_campaign, url=slower.url + "/hook", secret=SECRET, events=["arrival.decided"]
        )
        event_emit(draft_campaign, "arrival.decided", "arrival.decided:2", {"arrival": 2})
        started = time.monotonic()
        outcome, _ = delivery_attempt(WebhookDelivery.objects.get(status="pending").pk)
        seconds = time.monotonic() - started
    assert outcome == "retry" and seconds < 2 + 1, seconds
    assert "WEBHOOK_ATTEMPT_SECONDS" in WebhookAttempt.objects.latest("id").error
    Webhook.objects.all().delete()

    with hostile_server(huge(400)) as big:
        webhook_add(campaign=draft_campaign, url=big.url + "/hook", secret=SECRET, events=["arrival.decided"])
        event_emit(draft_campaign, "arrival.decided", "arrival.decided:3", {"arrival": 3})
        outcome, _ = delivery_attempt(WebhookDelivery.objects.get(status="pending").pk)
    assert outcome == "delivered" and WebhookAttempt.objects.latest("id").seconds < 2


def test_the_operator_bounds_webhooks_per_campaign_and_attempts_per_receiver(
    draft_campaign: Campaign, receiver: Receiver, settings: Any
) -> None:
    settings.WEBHOOKS_MAX_PER_CAMPAIGN = 2
    settings.WEBHOOK_MAX_PER_MINUTE = 1
    for _ in range(2):
        webhook_add(campaign=draft_campaign, url=receiver.url, secret=SECRET, events=["arrival.decided"])
    with pytest.raises(ValueError, match="WEBHOOKS_MAX_PER_CAMPAIGN"):
        webhook_add(campaign=draft_campaign, url=receiver.url, secret=SECRET, events=["arrival.decided"])
    event_emit(draft_campaign, "arrival.decided", "arrival.decided:1", {"arrival": 1})
    first, second = WebhookDelivery.objects.order_by("id")
    # The limit counts per clock minute: both attempts must fall in one (a run that crossed the
    # minute between them once saw the second delivered).
    while time.time() % 60 > 50:
        time.sleep(0.5)
    assert delivery_attempt(first.pk)[0] == "delivered"
    # The receiver had its one attempt of this minute: the next waits, not counted as an attempt.
    assert delivery_attempt(second.pk) == ("deferred", settings.WEBHOOK_ATTEMPT_SECONDS)
    second.refresh_from_db()
    assert second.attempts == 0 and second.status == "pending" and len(receiver.requests) == 1


def test_a_delivery_waits_one_deadline_when_the_cache_that_counts_attempts_is_unreachable(
    draft_campaign: Campaign, receiver: Receiver, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The per-receiver limits live in the cache; a cache past its short timeout must not fail the
    task (its delivery would then wait for the next worker start) nor send unchecked."""
    delivery = _delivery(draft_campaign, receiver)
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # nothing listens on the discard port
            "OPTIONS": {"socket_connect_timeout": 0.05, "socket_timeout": 0.05},
        }
    }
    with caplog.at_level("WARNING", logger="webhooks.deliveries"):
        assert delivery_attempt(delivery.pk) == ("deferred", settings.WEBHOOK_ATTEMPT_SECONDS)
    assert "cache unavailable" in caplog.text
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.attempts == 0 and not receiver.requests


def test_a_campaign_is_offered_only_the_events_its_mode_and_goal_can_emit(
    draft_campaign: Campaign, coordinator: AbstractBaseUser, receiver: Receiver
) -> None:
    from labeling.services.campaigns import campaign_create
    from webhooks.events import events_for

    graded = [name for name, _ in events_for(draft_campaign)]
    assert "arrival.decided" in graded and "judge_run.failed" in graded
    assert "campaign.decided" not in graded, "a two-system verdict needs the difference goal"
    pairwise = campaign_create(
        creator=coordinator, name="pairs", metric="DCG@5", grades=["0", "1"], judging_mode="pairwise"
    )
    assert events_for(pairwise) == []
    with pytest.raises(ValueError, match="this campaign can emit: none"):
        webhook_add(campaign=pairwise, url=receiver.url, secret=SECRET, events=["arrival.decided"])


def test_the_campaign_page_says_how_long_an_attempt_may_take(
    client: Any, coordinator: AbstractBaseUser, draft_campaign: Campaign, settings: Any
) -> None:
    settings.WEBHOOK_ATTEMPT_SECONDS = 7
    client.force_login(coordinator)
    page = client.get(f"/campaigns/{draft_campaign.pk}/").content.decode()
    assert "each attempt ends after 7 s whatever the receiver does" in page


def test_the_panel_is_the_webhooks_app_s_and_shows_only_where_events_can_happen(
    client: Any, coordinator: AbstractBaseUser, draft_campaign: Campaign, receiver: Receiver
) -> None:
    """The core's campaign page shows the panel the webhooks app registered: on a graded
    campaign with the retry schedule of BACKOFF_SECONDS; on a pairwise one (no event) none.
    Adding and removing through the page go through the app's one service each."""
    from labeling.services.campaigns import campaign_create
    from webhooks.deliveries import retry_schedule

    client.force_login(coordinator)
    page = client.get(f"/campaigns/{draft_campaign.pk}/").content.decode()
    assert 'id="webhooks"' in page and f"retried after {retry_schedule()}" in page
    assert retry_schedule() == "10 s, 1 min, 5 min and 30 min"
    pairwise = campaign_create(
        creator=coordinator, name="pairs", metric="DCG@5", grades=["0", "1"], judging_mode="pairwise"
    )
    assert 'id="webhooks"' not in client.get(f"/campaigns/{pairwise.pk}/").content.decode()

    refused = client.post(
        f"/campaigns/{draft_campaign.pk}/webhooks/",
        {"url": "http://192.0.2.1/hook", "secret": "a-refused-secret-JW4Q", "events": ["judge_run.failed"]},
        follow=True,
    ).content.decode()
    # The page says why and keeps what was typed, but never the secret.
    assert "Webhook not added" in refused and 'value="http://192.0.2.1/hook"' in refused
    assert 'value="judge_run.failed" checked' in refused and 'value="arrival.decided" checked' not in refused
    assert "JW4Q" not in refused and not Webhook.objects.filter(campaign=draft_campaign).exists()
    fresh = client.get(f"/campaigns/{draft_campaign.pk}/").content.decode()
    assert 'value="http://192.0.2.1/hook"' not in fresh, "kept for the page after the refusal only"
    added = client.post(
        f"/campaigns/{draft_campaign.pk}/webhooks/",
        {"url": receiver.url, "secret": "a-secret-whose-tail-is-QZ7X", "events": ["arrival.decided"]},
        follow=True,
    )
    assert "Webhook added" in added.content.decode()
    (hook,) = Webhook.objects.filter(campaign=draft_campaign)
    listed = client.get(f"/campaigns/{draft_campaign.pk}/").content.decode()
    assert "QZ7X" not in listed
    # Removing takes two steps (open, then confirm), with what goes with it said first.
    assert "<summary>Remove…</summary>" in listed and "Remove this webhook" in listed
    removed = client.post(f"/campaigns/{draft_campaign.pk}/webhooks/{hook.pk}/remove/", follow=True)
    assert "Webhook removed." in removed.content.decode()
    again = client.post(f"/campaigns/{draft_campaign.pk}/webhooks/{hook.pk}/remove/", follow=True)
    assert "No such webhook" in again.content.decode()
    assert not Webhook.objects.filter(campaign=draft_campaign).exists()


def test_deliveries_are_queued_by_the_name_of_the_task_that_makes_them() -> None:
    """`deliveries_queue` sends by name (no import circle with the tasks): the name is the task's."""
    from webhooks.deliveries import DELIVER_TASK
    from webhooks.tasks import webhook_deliver

    assert webhook_deliver.name == DELIVER_TASK
