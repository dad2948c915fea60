"""Webhooks: a campaign's events sent, signed, to URLs its coordinators registered.

An event (`event_emit`) is recorded once per key and becomes one delivery per active webhook
that asked for it. Deliveries are made by the Celery worker of the ``webhooks`` queue, never by a
web request nor by the worker that recomputes estimates, one attempt per task, each within a
wall-clock deadline (WEBHOOK_ATTEMPT_SECONDS: a receiver that trickles its answer is cut there;
only the status is read, never the body), one attempt per receiver at a time and at most
WEBHOOK_MAX_PER_MINUTE a minute (`_receiver_claim`), so a slow receiver holds one of the worker's
delivery slots at most and delays no other receiver by more than one deadline: a 2xx answer
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
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone

from estimation.judges.outbound import (
    DEFAULT_PORTS,
    CheckedTransport,
    OutboundRefused,
    Resolver,
    system_resolver,
    url_problem,
)
from labeling.models import Campaign, Webhook, WebhookAttempt, WebhookDelivery, WebhookEvent
from labeling.outbound import outbound_allowlists

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EventKind:
    """An event a module emits: its name, what it means, and which campaigns can emit it."""

    name: str
    description: str
    emitted_for: Callable[[Campaign], bool]


_EVENTS: dict[str, EventKind] = {}


def register_event(
    name: str, description: str, *, emitted_for: Callable[[Campaign], bool] = lambda campaign: True
) -> str:
    """Register an event the calling module emits (at import, next to its `event_emit`);
    `emitted_for` says which campaigns can emit it, so a page offers only those. Its name."""
    known = _EVENTS.get(name)
    if known is not None and known.description != description:
        raise ValueError(f"the webhook event {name!r} is registered twice")
    _EVENTS[name] = EventKind(name, description, emitted_for)
    return name


def events_for(campaign: Campaign) -> list[tuple[str, str]]:
    """(name, description) of the events the campaign can emit, by name."""
    return [(kind.name, kind.description) for kind in sorted(_EVENTS.values(), key=lambda kind: kind.name)
            if kind.emitted_for(campaign)]  # fmt: skip


def event_names() -> list[str]:
    """Every registered event's name."""
    return sorted(_EVENTS)


MAX_ATTEMPTS = 5
BACKOFF_SECONDS = (10, 60, 300, 1800)
"""Waits before the 2nd, 3rd, ... attempt."""
MAX_REDIRECTS = 3
SECRET_MIN_CHARS = 16
SECRET_MAX_CHARS = 200
WEBHOOKS_QUEUE = "webhooks"
# One attempt per receiver at a time, across the webhooks worker's delivery slots (threads) and
# its processes: the claim lives in the shared cache, and this lock makes it exact within one.
_CLAIMS = threading.Lock()


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
    offered = dict(events_for(campaign))
    unknown = [name for name in chosen if name not in offered]
    if unknown or not chosen:
        raise ValueError(
            f"unknown event(s) {', '.join(map(repr, unknown))} (this campaign can emit: "
            f"{', '.join(offered) or 'none'})"
            if unknown
            else "choose at least one event"
        )
    if not SECRET_MIN_CHARS <= len(secret) <= SECRET_MAX_CHARS:
        raise ValueError(f"the secret must have {SECRET_MIN_CHARS} to {SECRET_MAX_CHARS} characters")
    ceiling = settings.WEBHOOKS_MAX_PER_CAMPAIGN
    if campaign.webhooks.count() >= ceiling:
        raise ValueError(
            f"the campaign has {ceiling} webhooks, as many as the operator allows "
            "(WEBHOOKS_MAX_PER_CAMPAIGN): remove one first"
        )
    problem = webhook_url_problem(url)
    if problem:
        raise ValueError(problem)
    return Webhook.objects.create(campaign=campaign, url=url, secret=secret, events=chosen, created_by=user)


def event_emit(campaign: Campaign, name: str, key: str, data: dict[str, Any]) -> WebhookEvent | None:
    """Record the event once (None when `key` was recorded before) and queue its deliveries."""
    if name not in _EVENTS:
        raise ValueError(f"unknown webhook event {name!r}: register it (register_event)")
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


def _receiver(url: str) -> str:
    """The receiver a URL names (scheme, host and port): the unit of the per-receiver limits."""
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.host}:{parsed.port or DEFAULT_PORTS.get(parsed.scheme, 0)}"


def _receiver_claim(receiver: str, seconds: float) -> str | None:
    """Claim the receiver for one attempt (None: another attempt holds it, or it had its
    deliveries of this minute); the claim's key, to release."""
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
        cache.delete(claim)
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
    """POST one attempt within its wall-clock deadline, following at most MAX_REDIRECTS
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
    transport = CheckedTransport(outbound_allowlists(), resolve=resolve, deadline=deadline)
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
                    if hops > MAX_REDIRECTS:
                        raise httpx.TooManyRedirects(f"more than {MAX_REDIRECTS} redirects", request=request)
            status_code = answered  # the last hop's: a redirect refused on its way records none
        if status_code is None or not 200 <= status_code < 300:
            error = f"the receiver answered {status_code}"
    except OutboundRefused as refusal:
        error = f"refused by the outbound check: {refusal}"
    except httpx.TooManyRedirects:
        error = f"more than {MAX_REDIRECTS} redirects"
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
    _queue(due)
    return len(due)


def webhooks_summary(campaign: Campaign, *, recent: int = 10) -> list[dict[str, Any]]:
    """Each webhook with its events and its recent deliveries with every attempt (status code,
    seconds, error, time). The secret is never shown, not even in part."""
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
    "EventKind",
    "deliveries_due",
    "deliveries_resume",
    "delivery_attempt",
    "delivery_body",
    "event_emit",
    "event_names",
    "events_for",
    "register_event",
    "signature",
    "signature_valid",
    "webhook_add",
    "webhook_url_problem",
    "webhooks_summary",
]
