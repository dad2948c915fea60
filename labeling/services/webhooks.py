"""Webhooks: a campaign's events sent, signed, to URLs its coordinators registered.

An event (`event_emit`) is recorded once per key and becomes one delivery per active webhook
that asked for it. Deliveries are made by the Celery worker of the ``webhooks`` queue, never by a
web request nor by the worker that recomputes estimates, one attempt per task: a 2xx answer
delivers it; anything else (an error status, a refused or timed-out connection, a URL the
outbound check now refuses) is logged as an attempt and retried after BACKOFF_SECONDS, until
MAX_ATTEMPTS. A crashed worker loses nothing: the delivery stays pending, and the worker's start
queues every pending delivery that is due (`deliveries_due`).

Every request goes through `estimation.judges.outbound.CheckedTransport` with the operator's
OUTBOUND_ALLOWED_HOSTS: the host is resolved and every address checked before connecting, on the
first request and on each redirect (at most MAX_REDIRECTS). The body is JSON:

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
import time
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import httpx
from django.db import IntegrityError, transaction
from django.utils import timezone

from estimation.judges.outbound import (
    CheckedTransport,
    OutboundRefused,
    Resolver,
    system_resolver,
    url_problem,
)
from labeling.models import Campaign, Webhook, WebhookAttempt, WebhookDelivery, WebhookEvent
from labeling.outbound import outbound_allowlists

logger = logging.getLogger(__name__)

WEBHOOK_EVENTS: dict[str, str] = {
    "arrival.decided": "a run that arrived got its verdict, with the plan it was read by",
    "arrival.topup_spent": "a run's human top-up was spent",
    "campaign.budget_spent": "the campaign's budget is spent (judging stops)",
    "campaign.decided": "a two-system campaign got its verdict, with its plan",
    "judge_run.finished": "a model judge's run finished",
    "judge_run.failed": "a model judge's run failed",
}
MAX_ATTEMPTS = 5
BACKOFF_SECONDS = (10, 60, 300, 1800)
"""Waits before the 2nd, 3rd, ... attempt."""
TIMEOUT_SECONDS = 10.0
MAX_REDIRECTS = 3
SECRET_MIN_CHARS = 16
WEBHOOKS_QUEUE = "webhooks"


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


def webhook_url_problem(url: str, *, resolve: Resolver = system_resolver) -> str:
    """Why the server may not send to `url` ('' when it may): http or https with a host, no user
    name or password, no fragment, and a host the operator's outbound check admits after DNS
    resolution. A query string is allowed (some receivers take a token there)."""
    base = url.split("?", 1)[0]
    if "#" in url:
        return "the webhook URL must not contain a fragment ('#')"
    problem = url_problem(base, outbound_allowlists(), resolve=resolve)
    return problem.replace("base URL", "webhook URL")


def webhook_add(
    *, campaign: Campaign, url: str, secret: str, events: Iterable[str], user: Any = None
) -> Webhook:
    """Register a webhook; ValueError with the reason (nothing stored) for a URL the outbound
    check refuses, a short secret or an unknown event."""
    chosen = list(dict.fromkeys(events))
    unknown = [name for name in chosen if name not in WEBHOOK_EVENTS]
    if unknown or not chosen:
        raise ValueError(
            f"unknown event(s) {', '.join(map(repr, unknown))}" if unknown else "choose at least one event"
        )
    if len(secret) < SECRET_MIN_CHARS or len(secret) > 200:
        raise ValueError(f"the secret must have {SECRET_MIN_CHARS} to 200 characters")
    problem = webhook_url_problem(url)
    if problem:
        raise ValueError(problem)
    return Webhook.objects.create(campaign=campaign, url=url, secret=secret, events=chosen, created_by=user)


def event_emit(campaign: Campaign, name: str, key: str, data: dict[str, Any]) -> WebhookEvent | None:
    """Record the event once (None when `key` was recorded before) and queue its deliveries."""
    if name not in WEBHOOK_EVENTS:
        raise ValueError(f"unknown webhook event {name!r}")
    hooks = [hook for hook in campaign.webhooks.filter(active=True) if name in hook.events]
    try:
        with transaction.atomic():
            event = WebhookEvent.objects.create(campaign=campaign, name=name, key=key[:200], data=data)
            deliveries = WebhookDelivery.objects.bulk_create(
                [WebhookDelivery(webhook=hook, event=event, next_attempt_at=timezone.now()) for hook in hooks]
            )
    except IntegrityError:
        return None  # recorded before (a concurrent recompute, or a repeat of the same moment)
    ids = [delivery.pk for delivery in deliveries]
    if ids:
        transaction.on_commit(lambda: _queue(ids))
    return event


def _queue(delivery_ids: list[int], countdown: float = 0) -> None:
    from labeling.tasks import webhook_deliver

    for delivery_id in delivery_ids:
        try:
            webhook_deliver.apply_async((delivery_id,), countdown=countdown, queue=WEBHOOKS_QUEUE)
        except Exception:  # the broker is away: the delivery stays pending, the worker's start resumes it
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


def delivery_attempt(delivery_id: int, *, resolve: Resolver = system_resolver) -> tuple[str, float]:
    """One attempt of a pending delivery: ("delivered" | "retry" | "failed" | "skipped", seconds
    until the next attempt). Logged as a WebhookAttempt whatever happens."""
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
        attempt = delivery.attempts + 1
        # Held while this attempt runs, so that a second task for it (a resumed queue) skips it.
        held = now + timedelta(seconds=6 * TIMEOUT_SECONDS)
        WebhookDelivery.objects.filter(pk=delivery_id).update(attempts=attempt, next_attempt_at=held)
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
    try:
        with httpx.Client(
            transport=CheckedTransport(outbound_allowlists(), resolve=resolve),
            timeout=httpx.Timeout(TIMEOUT_SECONDS),
            follow_redirects=True,
            max_redirects=MAX_REDIRECTS,
        ) as client:
            response = client.post(hook.url, content=body, headers=headers)
        status_code = response.status_code
        if not 200 <= status_code < 300:
            error = f"the receiver answered {status_code}"
    except OutboundRefused as refusal:
        error = f"refused by the outbound check: {refusal}"
    except httpx.TooManyRedirects:
        error = f"more than {MAX_REDIRECTS} redirects"
    except httpx.HTTPError as failure:
        error = f"{type(failure).__name__}: {failure}" if str(failure) else type(failure).__name__
    seconds = time.perf_counter() - started
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


def deliveries_due(now: Any = None) -> list[int]:
    """Pending deliveries whose next attempt is due (a worker that died with them queued)."""
    moment = now or timezone.now()
    due = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=moment)
    return list(due.values_list("pk", flat=True))


def deliveries_resume() -> int:
    """Queue every due pending delivery; returns how many."""
    due = deliveries_due()
    _queue(due)
    return len(due)


def webhooks_summary(campaign: Campaign, *, recent: int = 10) -> list[dict[str, Any]]:
    """Each webhook with its events, the secret's last four characters and its recent deliveries
    with every attempt (status code, seconds, error, time)."""
    rows = []
    for hook in campaign.webhooks.order_by("id"):
        deliveries = hook.deliveries.select_related("event").prefetch_related("tries")
        deliveries = deliveries.order_by("-id")[:recent]
        rows.append(
            {
                "id": hook.pk,
                "url": hook.url,
                "events": list(hook.events),
                "active": hook.active,
                "secret_hint": "…" + hook.secret[-4:],
                "created": hook.created_at.isoformat(),
                "deliveries": [
                    {
                        "id": delivery.pk,
                        "event": delivery.event.name,
                        "status": delivery.status,
                        "attempts": [
                            {
                                "at": attempt.at.isoformat(),
                                "status_code": attempt.status_code,
                                "seconds": round(attempt.seconds, 3),
                                "error": attempt.error,
                            }
                            for attempt in delivery.tries.all()
                        ],
                        "next_attempt_at": _time(delivery.next_attempt_at),
                    }
                    for delivery in deliveries
                ],
            }
        )
    return rows


def _time(moment: Any) -> str | None:
    return moment.isoformat() if moment else None


__all__ = [
    "BACKOFF_SECONDS",
    "MAX_ATTEMPTS",
    "WEBHOOKS_QUEUE",
    "WEBHOOK_EVENTS",
    "deliveries_due",
    "deliveries_resume",
    "delivery_attempt",
    "delivery_body",
    "event_emit",
    "signature",
    "signature_valid",
    "webhook_add",
    "webhook_url_problem",
    "webhooks_summary",
]
