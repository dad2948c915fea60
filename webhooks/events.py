"""The events a campaign can send to its webhooks: each registered by the module that emits it
(`register_event`, next to its `event_emit`), with the campaigns that can emit it, so a page and
the API offer only those. An event is recorded once per key and becomes one delivery per active
webhook that asked for it (`webhooks.deliveries` sends them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from labeling.models import Campaign
from webhooks.deliveries import deliveries_queue
from webhooks.models import WebhookDelivery, WebhookEvent


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
        transaction.on_commit(lambda: deliveries_queue(ids))
    return event


def event_keys_recorded(campaign: Campaign, name: str) -> set[str]:
    """The keys of the campaign's recorded events of `name` (what was told already)."""
    return set(WebhookEvent.objects.filter(campaign=campaign, name=name).values_list("key", flat=True))


__all__ = ["EventKind", "event_emit", "event_keys_recorded", "events_for", "register_event"]
