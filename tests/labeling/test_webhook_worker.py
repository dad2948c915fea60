"""Webhook deliveries made by a real worker of the webhooks queue over a real Redis: an event
recorded in the app reaches a local receiver, signed, without the web process sending anything."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from pathlib import Path

import pytest
from django.db import transaction

from labeling.models import Campaign, WebhookAttempt
from labeling.services.webhooks import WEBHOOKS_QUEUE, event_emit, webhook_add
from tests.labeling.test_webhooks import SECRET, Receiver
from tests.workers import CeleryWorker

pytestmark = [pytest.mark.servers, pytest.mark.alone, pytest.mark.django_db(transaction=True)]


def test_the_webhooks_worker_delivers_a_signed_event(
    celery_worker: CeleryWorker, draft_campaign: Campaign, tmp_path: Path
) -> None:
    deliverer = CeleryWorker(celery_worker.redis_url, tmp_path, queues=(WEBHOOKS_QUEUE,))
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
