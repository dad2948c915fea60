"""Webhook deliveries made by a real worker of the webhooks queue over a real Redis: an event
recorded in the app reaches a local receiver, signed, without the web process sending anything."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import transaction

from labeling.models import Campaign
from labeling.services.campaigns import campaign_create
from tests.hostile_server import hostile_server
from tests.webhooks.helpers import SECRET, Receiver
from tests.workers import CeleryWorker, broker_chosen
from webhooks.events import event_emit
from webhooks.models import WebhookAttempt
from webhooks.services import webhook_add

pytestmark = [pytest.mark.servers, pytest.mark.alone, pytest.mark.django_db(transaction=True)]


def test_the_webhooks_worker_delivers_a_signed_event(
    celery_worker: CeleryWorker, draft_campaign: Campaign, tmp_path: Path
) -> None:
    deliverer = CeleryWorker(celery_worker.redis_url, tmp_path, queues=(settings.WEBHOOKS_QUEUE,))
    deliverer.start()
    receiver = Receiver()
    try:
        deliverer.wait_ready()
        webhook_add(campaign=draft_campaign, url=receiver.url, secret=SECRET, events=["arrival.decided"])
        with transaction.atomic():  # queued when it commits, as in a recompute
            event_emit(draft_campaign, "arrival.decided", "arrival.decided:1", {"verdict": "worse"})
        deadline = time.monotonic() + 30
        while not receiver.requests and time.monotonic() < deadline:
            time.sleep(0.1)
        assert receiver.requests, deliverer.log.read_text(errors="replace")[-3000:]
        (request,) = receiver.requests
        signed = "sha256=" + hmac.new(SECRET.encode(), request["body"], hashlib.sha256).hexdigest()
        assert hmac.compare_digest(signed, request["headers"]["X-Signature-256"])
        assert json.loads(request["body"])["data"] == {"verdict": "worse"}
        deadline = time.monotonic() + 10
        while not WebhookAttempt.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert WebhookAttempt.objects.get().status_code == 200
        # The webhooks worker ran the delivery; the default worker (recomputes) received none.
        assert "Task labeling.tasks.webhook_deliver[" in deliverer.log.read_text(errors="replace")
        assert "Task labeling.tasks.webhook_deliver[" not in celery_worker.log.read_text(errors="replace")
    finally:
        receiver.server.shutdown()
        deliverer.stop()


@pytest.mark.parametrize("broker", ["redis", "embedded"])
def test_a_receiver_that_trickles_delays_another_campaign_s_webhook_by_at_most_one_deadline(
    broker: str,
    draft_campaign: Campaign,
    coordinator: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    redis_url = broker_chosen(broker, request)
    deadline = 3.0
    monkeypatch.setenv("WEBHOOK_ATTEMPT_SECONDS", str(deadline))

    def trickled_headers(request: Any, connection: Any) -> None:
        while True:  # headers a byte at a time, for ever: no read timeout ever fires
            connection.sendall(b"X")
            time.sleep(0.5)

    other = campaign_create(creator=coordinator, name="other", metric="DCG@5", grades=["0", "1"], budget=10)
    receiver = Receiver()
    with hostile_server(trickled_headers) as slow:
        # Six deliveries to the slow receiver first (more than the worker's slots), then one of
        # another campaign: all pending before the worker starts, which queues them in order.
        for number in range(6):
            webhook_add(
                campaign=draft_campaign,
                url=f"{slow.url}/hook{number}",
                secret=SECRET,
                events=["arrival.decided"],
            )
        event_emit(draft_campaign, "arrival.decided", "arrival.decided:1", {"verdict": "worse"})
        webhook_add(campaign=other, url=receiver.url, secret=SECRET, events=["arrival.decided"])
        event_emit(other, "arrival.decided", "arrival.decided:2", {"verdict": "better"})
        deliverer = CeleryWorker(redis_url, tmp_path, queues=(settings.WEBHOOKS_QUEUE,))
        deliverer.start()
        try:
            deliverer.wait_ready()
            ready = time.monotonic()
            while not receiver.requests and time.monotonic() < ready + 60:
                time.sleep(0.05)
            waited = time.monotonic() - ready
            assert receiver.requests, deliverer.log.read_text(errors="replace")[-3000:]
            assert json.loads(receiver.requests[0]["body"])["data"] == {"verdict": "better"}
            # One attempt's deadline plus a few seconds of queue start-up, whatever the slow one does.
            assert waited < deadline + 3, waited
            # The slow receiver had one attempt at a time, each cut at the deadline.
            time.sleep(deadline + 1)
            attempts = WebhookAttempt.objects.filter(delivery__webhook__campaign=draft_campaign)
            assert attempts.exists() and all(
                "WEBHOOK_ATTEMPT_SECONDS" in attempt.error and attempt.seconds < deadline + 1
                for attempt in attempts
            ), [(attempt.error, attempt.seconds) for attempt in attempts]
        finally:
            receiver.server.shutdown()
            deliverer.stop()
