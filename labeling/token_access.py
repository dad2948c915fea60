"""Reads for judging requests that carry an API token: who asks, and may they judge here.

Each function is one hand-written statement that checks the token (as DRF's
TokenAuthentication does: the key exists and its user is active) and the right to judge
(as `CampaignPermissionBackend` grants `labeling.judge_campaign`: a campaign member whose role
judges, a superuser or a member of the admin group), and reads what the judging services need.
They answer None for anything else, and the caller then goes the full DRF way, which tells
401, 403 and 404 apart. The point is speed: these requests come from every assessor for every
item, and the ORM's query compilation plus DRF's authentication cost more than the rest of the
request together.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.db import connection
from django.db.models import Model
from rest_framework.authtoken.models import Token

from infrastructure.db import prepared_cursor
from labeling.models import Campaign, CampaignMember, Document, Task
from labeling.permissions import JUDGE, ROLE_ADMIN, member_roles_with


def _in_model_order(model: type[Model], wanted: set[str]) -> tuple[str, ...]:
    # Model.from_db takes a subset of fields in the model's own field order.
    return tuple(field.attname for field in model._meta.concrete_fields if field.attname in wanted)


# The campaign fields the judging services read (lease, overlap, status, grade scale).
_CAMPAIGN_FIELDS = _in_model_order(
    Campaign, {"id", "judging_mode", "status", "overlap", "lease_seconds", "blocked", "grades", "gold_active"}
)
_TASK_FIELDS = _in_model_order(Task, {"id", "campaign_id", "topic_id", "document_id", "draw_id", "kind"})


@dataclass(frozen=True)
class TokenJudge:
    """The token's user and a campaign they may judge (only `_CAMPAIGN_FIELDS` loaded)."""

    user: User
    campaign: Campaign


@functools.cache
def _tables() -> dict[str, str]:
    quote = connection.ops.quote_name
    user_model = get_user_model()
    groups = user_model._meta.get_field("groups").remote_field.through
    return {
        "token": quote(Token._meta.db_table),
        "user": quote(user_model._meta.db_table),
        "campaign": quote(Campaign._meta.db_table),
        "member": quote(CampaignMember._meta.db_table),
        "user_groups": quote(groups._meta.db_table),  # type: ignore[union-attr]  # a many-to-many: always a through model
        "group": quote(Group._meta.db_table),
        "task": quote(Task._meta.db_table),
        "document": quote(Document._meta.db_table),
        # The engine's table, found through its relation to the campaign (the core imports no
        # engine module).
        "sampling_state": quote(Campaign._meta.get_field("sampling_state").related_model._meta.db_table),
    }


@functools.cache
def _may_judge() -> str:
    """SQL true when user `u` may judge campaign `c` (bound as %(judge_roles_N)s, %(admin)s)."""
    tables = _tables()
    roles = ", ".join(f"%(judge_role_{index})s" for index in range(len(member_roles_with(JUDGE))))
    return f"""(u.is_superuser
        OR EXISTS (SELECT 1 FROM {tables["member"]} AS m
                   WHERE m.campaign_id = c.id AND m.user_id = u.id AND m.role IN ({roles}))
        OR EXISTS (SELECT 1 FROM {tables["user_groups"]} AS ug
                   JOIN {tables["group"]} AS g ON g.id = ug.group_id
                   WHERE ug.user_id = u.id AND g.name = %(admin)s))"""


@functools.cache
def _role_parameters() -> dict[str, str]:
    roles = {f"judge_role_{index}": role for index, role in enumerate(member_roles_with(JUDGE))}
    return {"admin": ROLE_ADMIN, **roles}


def _parameters(token: str, **values: Any) -> dict[str, Any]:
    return {"token": token, **_role_parameters(), **values}


def _json(value: Any) -> Any:
    # from_db skips the field converters the ORM applies: a JSON column may arrive as text.
    return json.loads(value) if isinstance(value, str | bytes) else value


def _campaign_columns() -> str:
    return ", ".join(f"c.{connection.ops.quote_name(name)}" for name in _CAMPAIGN_FIELDS)


def _user(user_id: int) -> User:
    # Only the primary key is loaded: anything else read by mistake is fetched, never made up.
    return get_user_model().from_db(connection.alias, ["id"], [user_id])


def _campaign(values: tuple[Any, ...]) -> Campaign:
    fields = dict(zip(_CAMPAIGN_FIELDS, values, strict=True))
    fields["grades"] = _json(fields["grades"])
    return Campaign.from_db(connection.alias, list(fields), list(fields.values()))


@functools.cache
def _judge_sql() -> str:
    tables = _tables()
    return f"""
        SELECT u.id, {_campaign_columns()}
        FROM {tables["token"]} AS tok
        JOIN {tables["user"]} AS u ON u.id = tok.user_id
        JOIN {tables["campaign"]} AS c ON c.id = %(campaign)s
        WHERE tok.{connection.ops.quote_name("key")} = %(token)s AND u.is_active AND {_may_judge()}
    """


def judge_by_token(token: str, campaign_id: int) -> TokenJudge | None:
    """The token's user and the campaign, if the user may judge it; else None."""
    with prepared_cursor() as cursor:
        cursor.execute(_judge_sql(), _parameters(token, campaign=campaign_id))
        row = cursor.fetchone()
    if row is None:
        return None
    return TokenJudge(user=_user(row[0]), campaign=_campaign(row[1:]))


@functools.cache
def _task_sql() -> str:
    tables = _tables()
    task_columns = ", ".join(f"t.{name}" for name in _TASK_FIELDS)
    return f"""
        SELECT u.id, {task_columns}, d.length,
            (SELECT s.cost_model FROM {tables["sampling_state"]} AS s WHERE s.campaign_id = c.id),
            {_campaign_columns()}
        FROM {tables["token"]} AS tok
        JOIN {tables["user"]} AS u ON u.id = tok.user_id
        JOIN {tables["task"]} AS t ON t.id = %(task)s
        JOIN {tables["campaign"]} AS c ON c.id = t.campaign_id
        JOIN {tables["document"]} AS d ON d.id = t.document_id
        WHERE tok.{connection.ops.quote_name("key")} = %(token)s AND u.is_active AND {_may_judge()}
    """


def task_by_token(token: str, task_id: int) -> tuple[User, Task] | None:
    """The token's user and the task with its campaign, document length and cost model (what
    answering needs, as `selectors.task_get_for_assessor` reads them), if the user may judge
    the task's campaign; else None."""
    with prepared_cursor() as cursor:
        cursor.execute(_task_sql(), _parameters(token, task=task_id))
        row = cursor.fetchone()
    if row is None:
        return None
    task_end = 1 + len(_TASK_FIELDS)
    task = Task.from_db(connection.alias, list(_TASK_FIELDS), row[1:task_end])
    task.campaign = _campaign(row[task_end + 2 :])
    task.document_length = row[task_end]  # type: ignore[attr-defined]  # read with the task, as task_get_for_assessor annotates it
    task.sampling_cost_model = _json(row[task_end + 1])  # type: ignore[attr-defined]  # read with the task, as task_get_for_assessor annotates it
    return _user(row[0]), task
