"""A campaign's webhooks: register one (`webhook_add`: the URL through the server's outbound
policy, a secret, events the campaign can emit, under WEBHOOKS_MAX_PER_CAMPAIGN), remove one
(`webhook_remove`, the page's and the API's), and the summary both show. The secret is
write-only: never shown, exported or logged, not even in part."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings

from labeling.models import Campaign
from outbound import WEBHOOK, Resolver, outbound_url_problem, system_resolver
from webhooks.events import events_for
from webhooks.models import Webhook

SECRET_MIN_CHARS = 16
SECRET_MAX_CHARS = 200


def webhook_url_problem(url: str, *, resolve: Resolver = system_resolver) -> str:
    """Why the server may not send to `url` ('' when it may): the outbound policy's rules for a
    webhook's URL (http or https with a host, no user name or password, no fragment; a query is
    allowed) and a host the operator's outbound check admits after DNS resolution."""
    return outbound_url_problem(url, client=WEBHOOK, resolve=resolve)


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


def webhook_remove(campaign: Campaign, webhook_id: int) -> bool:
    """Remove one of the campaign's webhooks with its deliveries; False when it has no such one."""
    deleted, _ = Webhook.objects.filter(campaign=campaign, pk=webhook_id).delete()
    return bool(deleted)


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
    "SECRET_MAX_CHARS",
    "SECRET_MIN_CHARS",
    "webhook_add",
    "webhook_remove",
    "webhook_url_problem",
    "webhooks_summary",
]
