"""One lease primitive for every unit an assessor holds: graded tasks, pair tasks, top-k heaps.

A lease is the triple (assessor, leased_at, lease_expires_at) on a row. It is claimed with a
conditional UPDATE that only one claimant can win (``filter(pk, condition).update(...) == 1``),
renewed by its holder, returned to the pool, and expires by time: an expired lease is
claimable again where the unit's own condition says so (a heap with answers stays its
assessor's). Graded tasks (``graded.claims``) are claimed with one hand-written
statement under the same rules: on PostgreSQL with SKIP LOCKED, on SQLite as a single
UPDATE ... RETURNING that takes the write lock itself.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import Literal

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, models
from django.db.models import Q


class LeaseConflict(Exception):
    """The unit's lease expired or belongs to someone else (HTTP 409)."""


class UndoNotAllowed(Exception):
    """Nothing to undo: not the assessor's answer, or the undo window has passed (HTTP 409)."""


def lease_expiry(now: datetime, seconds: int) -> datetime:
    """When a lease taken or renewed at `now` for `seconds` runs out."""
    return now + timedelta(seconds=seconds)


def unanswered_claimable(now: datetime) -> Q:
    """Unanswered, and held by nobody or by a lease that ran out (tasks and pair tasks)."""
    return Q(answered_at__isnull=True) & (Q(assessor__isnull=True) | Q(lease_expires_at__lt=now))


def lease_claim(
    model: type[models.Model],
    pk: int,
    assessor: User,
    now: datetime,
    seconds: int,
    claimable: Q,
    **also: object,
) -> bool:
    """Lease row `pk` to the assessor if it still meets `claimable`; True for the one winner."""
    fields = {"assessor": assessor, "leased_at": now, "lease_expires_at": lease_expiry(now, seconds)}
    return model._default_manager.filter(pk=pk).filter(claimable).update(**fields, **also) == 1


def lease_renew(
    model: type[models.Model], pk: int, now: datetime, seconds: int, held: Q | None = None
) -> bool:
    """Extend the lease of row `pk` from `now` (its holder came back); `held` narrows which rows."""
    rows = model._default_manager.filter(pk=pk)
    if held is not None:
        rows = rows.filter(held)
    return rows.update(leased_at=now, lease_expires_at=lease_expiry(now, seconds)) == 1


LeaseState = Literal["active", "idle", "left"]
LEASE_STATES: tuple[str, ...] = ("active", "idle", "left")


def lease_hold(
    model: type[models.Model],
    pk: int,
    assessor: User,
    state: str,
    seconds: int,
    now: datetime,
    stamp: datetime | None = None,
    **on_return: object,
) -> bool:
    """What the holder's page says of the unshown unit: "active" (in view again: a full lease of
    `seconds`), "idle" (its tab is hidden: the lease runs out after LABELING_IDLE_LEASE_SECONDS,
    so nobody waits on a tab no one looks at) or "left" (the page was closed: back to the pool,
    setting `on_return` too). False when the assessor does not hold the unit (answered, or it
    went to someone else).

    `stamp` is the `leased_at` the page was served the unit with: a report from a page that no
    longer holds that lease changes nothing. A reloaded page is served the unit again (a new
    `leased_at`), and the old page's "left", which the browser may deliver after that, must not
    give back the item the new page shows. A report keeps `leased_at` as it is, so the page's
    own later reports still match."""
    held = Q(assessor_id=assessor.pk, answered_at__isnull=True)
    if stamp is not None:
        held &= Q(leased_at=stamp)
    rows = model._default_manager.filter(held, pk=pk)
    if state == "left":
        return leases_return(rows, **on_return) == 1
    if state == "idle":
        seconds = min(seconds, settings.LABELING_IDLE_LEASE_SECONDS)
    return rows.update(lease_expires_at=lease_expiry(now, seconds)) == 1


def lease_close(model: type[models.Model], pk: int, assessor: User, now: datetime) -> bool:
    """The holder answers: close an unexpired lease (True), or nothing matches (False: expired,
    someone else's, or answered already, which is what makes a double submit store once).
    Hand-written (every answer runs it): one conditional UPDATE, as the ORM's would be."""
    at = connection.ops.adapt_datetimefield_value(now)
    with connection.cursor() as cursor:
        cursor.execute(_lease_close_sql(model), [at, pk, assessor.pk, at])
        return cursor.rowcount == 1


@functools.cache
def _lease_close_sql(model: type[models.Model]) -> str:
    quote = connection.ops.quote_name

    def column(name: str) -> str:
        field = model._meta.get_field(name)
        assert isinstance(field, models.Field) and field.column, name
        return quote(field.column)

    answered = column("answered_at")
    return (
        f"UPDATE {quote(model._meta.db_table)} SET {answered} = %s WHERE {column(model._meta.pk.name)} = %s "
        f"AND {column('assessor')} = %s AND {answered} IS NULL AND {column('lease_expires_at')} >= %s"
    )


def leases_return(rows: models.QuerySet, **also: object) -> int:
    """Give these rows back to the pool: nobody holds them any more; returns how many."""
    return rows.update(assessor=None, leased_at=None, lease_expires_at=None, **also)


def lease_return(model: type[models.Model], pk: int, **also: object) -> None:
    """Give row `pk` back to the pool (`also`: further fields to set, e.g. answered_at=None)."""
    leases_return(model._default_manager.filter(pk=pk), **also)


def lease_reopen(
    model: type[models.Model],
    pk: int,
    assessor: User,
    now: datetime,
    seconds: int,
    **also: object,
) -> None:
    """Undo: the answered row is unanswered again and leased to the assessor who took it back."""
    model._default_manager.filter(pk=pk).update(
        assessor=assessor,
        answered_at=None,
        leased_at=now,
        lease_expires_at=lease_expiry(now, seconds),
        **also,
    )
