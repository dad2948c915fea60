"""Webhook deliveries: each recorded event (`webhooks.events`) sent, signed, to every webhook that
asked for it. Deliveries are made by the Celery worker of the ``webhooks`` queue, never by a
web request nor by the worker that recomputes estimates, one attempt per task, each within a
wall-clock deadline (WEBHOOK_ATTEMPT_SECONDS: a receiver that trickles its answer is cut there;
only the status is read, never the body), one attempt per receiver at a time and at most
WEBHOOK_MAX_PER_MINUTE a minute (`_receiver_claim`), so a slow receiver holds one of the worker's
delivery slots at most and delays no other receiver by more than one deadline: a 2xx answer
delivers it; anything else (an error status, a refused or timed-out connection, a URL the
outbound check now refuses) is logged as an attempt and retried after BACKOFF_SECONDS, until
MAX_ATTEMPTS. A crashed worker loses nothing: the delivery stays pending, and the worker's start
queues every pending delivery that is due (`deliveries_due`).

Every request goes through the server's outbound policy (`outbound`, client `WEBHOOK`): the host
is resolved and every address checked against OUTBOUND_ALLOWED_HOSTS before connecting, on the
first request and on each redirect (at most `WEBHOOK.max_redirects`). The body is JSON:

    {"event": ..., "delivery": id, "attempt": n, "campaign": id, "created": ISO time of the event,
     "sent_at": UNIX seconds of this attempt, "data": {...}}

signed with HMAC-SHA256 of the raw body under the webhook's secret, in ``X-Signature-256:
sha256=<hex>``; ``X-Webhook-Timestamp`` repeats ``sent_at`` (inside the signed body, so a
receiver that rejects old timestamps rejects replays), ``X-Webhook-Event`` and
``X-Webhook-Delivery`` name it (a receiver deduplicates retries by the delivery id).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
from datetime import timedelta
from typing import Any

import httpx
from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from infrastructure.unavailable import UNAVAILABLE
from outbound import DEFAULT_PORTS, WEBHOOK, OutboundRefused, Resolver, checked_transport, system_resolver
from webhooks.models import WebhookAttempt, WebhookDelivery

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
BACKOFF_SECONDS = (10, 60, 300, 1800)
"""Waits before the 2nd, 3rd, ... attempt."""
# One attempt per receiver at a time, across the webhooks worker's delivery slots (threads) and
# its processes: the claim lives in the shared cache, and this lock makes it exact within one.
_CLAIMS = threading.Lock()


def retry_schedule() -> str:
    """The waits between attempts in words ("10 s, 1 min, 5 min and 30 min"), for the pages."""
    words = [f"{wait // 60:g} min" if wait >= 60 else f"{wait:g} s" for wait in BACKOFF_SECONDS]
    return ", ".join(words[:-1]) + " and " + words[-1]


def signature(secret: str, body: bytes) -> str:
    """The X-Signature-256 header of `body`: "sha256=" and the hex HMAC-SHA256 under `secret`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_valid(
    secret: str, body: bytes, header: str, *, now: float | None = None, tolerance: float = 300
) -> bool:
    """What a receiver checks: the signature of the raw body (compared in constant time), and
    that the body's ``sent_at`` is within `tolerance` seconds of `now` (a replay is older)."""
    if not hmac.compare_digest(signature(secret, body), header or ""):
        return False
    try:
        sent_at = float(json.loads(body)["sent_at"])
    except (ValueError, KeyError, TypeError):
        return False
    return abs((time.time() if now is None else now) - sent_at) <= tolerance


DELIVER_TASK = "labeling.tasks.webhook_deliver"
"""The attempt's Celery task (`webhooks.tasks`), queued by name so that this module does not import
the tasks that import it; the name it had in the core app, so queued messages still run."""


def deliveries_queue(delivery_ids: list[int], countdown: float = 0) -> None:
    """Queue one attempt of each delivery on the webhooks worker's queue."""
    for delivery_id in delivery_ids:
        try:
            current_app.send_task(
                DELIVER_TASK, args=[delivery_id], countdown=countdown, queue=settings.WEBHOOKS_QUEUE
            )
        except UNAVAILABLE as error:  # the delivery stays pending, the worker's start resumes it
            logger.warning("could not queue webhook delivery %s: %r", delivery_id, error)
        except Exception:
            logger.exception("could not queue webhook delivery %s", delivery_id)


def delivery_body(delivery: WebhookDelivery, attempt: int, sent_at: float) -> bytes:
    """The JSON body of one attempt (module docstring)."""
    event = delivery.event
    return json.dumps(
        {
            "event": event.name,
            "delivery": delivery.pk,
            "attempt": attempt,
            "campaign": event.campaign_id,
            "created": event.created_at.isoformat(),
            "sent_at": int(sent_at),
            "data": event.data,
        },
        separators=(",", ":"),
        sort_keys=True,
    ).encode()


def _receiver(url: str) -> str:
    """The receiver a URL names (scheme, host and port): the unit of the per-receiver limits."""
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.host}:{parsed.port or DEFAULT_PORTS.get(parsed.scheme, 0)}"


def _receiver_claim(receiver: str, seconds: float) -> str | None:
    """Claim the receiver for one attempt (None: another attempt holds it, it had its deliveries
    of this minute, or the cache that counts them is unavailable); the claim's key, to release."""
    try:
        return _receiver_claim_counted(receiver, seconds)
    except UNAVAILABLE as error:  # deferred like a busy receiver: the limits cannot be checked
        logger.warning(
            "cache unavailable; the delivery to %s waits one attempt's deadline: %r", receiver, error
        )
        return None


def _receiver_claim_release(key: str) -> None:
    try:
        cache.delete(key)
    except UNAVAILABLE:  # the claim expires by itself a few seconds after the attempt's deadline
        logger.warning("cache unavailable; the claim on %s expires by itself", key)


def _receiver_claim_counted(receiver: str, seconds: float) -> str | None:
    minute = int(time.time() // 60)
    with _CLAIMS:
        sent = cache.get_or_set(f"webhook-rate:{receiver}:{minute}", 0, timeout=120)
        if sent is not None and sent >= settings.WEBHOOK_MAX_PER_MINUTE:
            return None
        key = f"webhook-busy:{receiver}"
        if not cache.add(key, 1, timeout=seconds + 5):
            return None
        try:
            cache.incr(f"webhook-rate:{receiver}:{minute}")
        except ValueError:  # expired between the two calls
            cache.set(f"webhook-rate:{receiver}:{minute}", 1, timeout=120)
    return key


def delivery_attempt(delivery_id: int, *, resolve: Resolver = system_resolver) -> tuple[str, float]:
    """One attempt of a pending delivery: ("delivered" | "retry" | "failed" | "skipped" |
    "deferred", seconds until the next attempt). Logged as a WebhookAttempt whatever happens,
    except when deferred: its receiver is busy with another attempt or had its
    WEBHOOK_MAX_PER_MINUTE, so no slot waits on it (the delivery is tried again after one
    attempt's deadline, not counted as an attempt)."""
    deadline_seconds = float(settings.WEBHOOK_ATTEMPT_SECONDS)
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update()
            .select_related("webhook", "event")
            .filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING)
            .first()
        )
        now = timezone.now()
        if delivery is None:
            return "skipped", 0.0  # delivered or failed already
        if delivery.next_attempt_at is not None and delivery.next_attempt_at > now + timedelta(seconds=2):
            return "skipped", 0.0  # another task holds it, or its next attempt is not due
        claim = _receiver_claim(_receiver(delivery.webhook.url), deadline_seconds)
        if claim is None:
            WebhookDelivery.objects.filter(pk=delivery_id).update(
                next_attempt_at=now + timedelta(seconds=deadline_seconds)
            )
            return "deferred", deadline_seconds
        attempt = delivery.attempts + 1
        # Held while this attempt runs, so that a second task for it (a resumed queue) skips it.
        held = now + timedelta(seconds=2 * deadline_seconds + 10)
        WebhookDelivery.objects.filter(pk=delivery_id).update(attempts=attempt, next_attempt_at=held)
    try:
        status_code, error, seconds = _post(delivery, attempt, deadline_seconds, resolve)
    finally:
        _receiver_claim_release(claim)
    WebhookAttempt.objects.create(
        delivery=delivery, status_code=status_code, seconds=seconds, error=error[:500]
    )
    this = WebhookDelivery.objects.filter(pk=delivery_id)
    if not error:
        this.update(
            status=WebhookDelivery.Status.DELIVERED, delivered_at=timezone.now(), next_attempt_at=None
        )
        return "delivered", 0.0
    if attempt >= MAX_ATTEMPTS:
        this.update(status=WebhookDelivery.Status.FAILED, next_attempt_at=None)
        return "failed", 0.0
    wait = float(BACKOFF_SECONDS[min(attempt - 1, len(BACKOFF_SECONDS) - 1)])
    this.update(next_attempt_at=timezone.now() + timedelta(seconds=wait))
    return "retry", wait


def _post(
    delivery: WebhookDelivery, attempt: int, deadline_seconds: float, resolve: Resolver
) -> tuple[int | None, str, float]:
    """POST one attempt within its wall-clock deadline, following at most WEBHOOK.max_redirects
    redirects (each hop checked by the transport); only the status is read, never the body, so
    a receiver's answer costs no memory whatever its size. (status, error, seconds)."""
    hook = delivery.webhook
    sent_at = time.time()
    body = delivery_body(delivery, attempt, sent_at)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "assess-webhooks/1",
        "X-Webhook-Event": delivery.event.name,
        "X-Webhook-Delivery": str(delivery.pk),
        "X-Webhook-Timestamp": str(int(sent_at)),
        "X-Signature-256": signature(hook.secret, body),
    }
    status_code, error = None, ""
    started = time.perf_counter()
    deadline = time.monotonic() + deadline_seconds
    transport = checked_transport(resolve=resolve, deadline=deadline)
    try:
        with httpx.Client(transport=transport, timeout=httpx.Timeout(deadline_seconds)) as client:
            request: httpx.Request | None = client.build_request(
                "POST", hook.url, content=body, headers=headers
            )
            hops, answered = 0, None
            while request is not None:
                response = client.send(request, stream=True)
                response.close()  # the status is the answer; the body is never read
                answered, request = response.status_code, response.next_request
                if request is not None:
                    hops += 1
                    if hops > WEBHOOK.max_redirects:
                        raise httpx.TooManyRedirects(
                            f"more than {WEBHOOK.max_redirects} redirects", request=request
                        )
            status_code = answered  # the last hop's: a redirect refused on its way records none
        if status_code is None or not 200 <= status_code < 300:
            error = f"the receiver answered {status_code}"
    except OutboundRefused as refusal:
        error = f"refused by the outbound check: {refusal}"
    except httpx.TooManyRedirects:
        error = f"more than {WEBHOOK.max_redirects} redirects"
    except httpx.TimeoutException:
        error = f"no answer within the attempt's deadline ({deadline_seconds:g} s, WEBHOOK_ATTEMPT_SECONDS)"
    except httpx.HTTPError as failure:
        error = f"{type(failure).__name__}: {failure}" if str(failure) else type(failure).__name__
    return status_code, error, time.perf_counter() - started


def deliveries_due(now: Any = None) -> list[int]:
    """Pending deliveries whose next attempt is due (a worker that died with them queued)."""
    moment = now or timezone.now()
    due = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=moment)
    return list(due.values_list("pk", flat=True))


def deliveries_resume() -> int:
    """Queue every due pending delivery; returns how many."""
    due = deliveries_due()
    deliveries_queue(due)
    return len(due)


__all__ = [
    "BACKOFF_SECONDS",
    "MAX_ATTEMPTS",
    "deliveries_due",
    "deliveries_queue",
    "deliveries_resume",
    "delivery_attempt",
    "delivery_body",
    "retry_schedule",
    "signature",
    "signature_valid",
]
