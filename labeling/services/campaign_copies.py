"""Keeping the campaign list tidy: clone a campaign (settings, files, members, and through the mode
its own data, e.g. gold questions; no judgments),
archive it out of the work lists, delete it.

A campaign that runs arrived in (with a human top-up each) is cloned as it was before any arrival:
the budget the coordinator set (without the top-ups, with what verdicts gave back) and the runs
pooled before; `with_arrivals=True` takes the grown budget and the arrived runs as ordinary
pooled runs.

The clone copies rows with ``INSERT ... SELECT`` joined on the natural keys (qid, docno, system
name), so a campaign of millions of run lines copies in the database without passing through
Python, in one transaction on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Model, Sum
from django.utils import timezone

from labeling.models import (
    Campaign,
    CampaignMember,
    CampaignProgress,
    Document,
    Judgment,
    PoolItem,
    RankingEntry,
    System,
    Topic,
)
from labeling.modes import mode_of
from labeling.services.campaigns import campaign_pause
from labeling.services.pools import pool_rebuild

# A clone takes over its source's settings (`Campaign.SETTINGS`); status, seed, pool version,
# blocking and dates start afresh (a new seed: the clone's draws are independent of the source's).


def table_name(model: type[Model]) -> str:
    """The quoted table of a model, for the clone's hand-written statements."""
    return connection.ops.quote_name(model._meta.db_table)


def rows_copy(sql: str, params: list[Any] | dict[str, Any]) -> None:
    """Run one ``INSERT ... SELECT`` of the clone."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def clone_items_join(alias: str) -> str:
    """JOINs that find, for the row `alias` of the source, its topic and document in the clone
    by qid and docno (`new_topic`, `new_document`); the clone's id is the named parameter `clone`."""
    topic, document = table_name(Topic), table_name(Document)
    return (
        f"JOIN {topic} old_topic ON old_topic.id = {alias}.topic_id "
        f"JOIN {topic} new_topic ON new_topic.campaign_id = %(clone)s AND new_topic.qid = old_topic.qid "
        f"JOIN {document} old_document ON old_document.id = {alias}.document_id "
        f"JOIN {document} new_document ON new_document.campaign_id = %(clone)s "
        f"AND new_document.docno = old_document.docno "
    )


def budget_before_arrivals(campaign: Campaign) -> float:
    """The budget as the coordinator set it: the current one without the arrivals' top-ups, with
    what verdicts took off when they came before their budget was spent."""
    topups = campaign.arrivals.aggregate(total=Sum("topup_budget"))["total"] or 0.0
    returned = campaign.verdicts.aggregate(total=Sum("returned"))["total"] or 0.0
    return max(float(campaign.budget) - float(topups) + float(returned), 0.0)


def clone_arrivals(campaign: Campaign) -> dict[str, Any] | None:
    """What a clone leaves out by default and takes `with_arrivals` (None without arrivals):
    the arrived runs, the budget before them and the budget now."""
    arrived = list(campaign.arrivals.order_by("pk").values_list("system__name", flat=True))
    if not arrived:
        return None
    return {
        "runs": arrived,
        "budget_before": budget_before_arrivals(campaign),
        "budget_now": float(campaign.budget),
    }


def _copy_files(source: Campaign, clone: Campaign, *, with_arrivals: bool) -> None:
    topic, document, system = table_name(Topic), table_name(Document), table_name(System)
    entry, judgment = table_name(RankingEntry), table_name(Judgment)
    rows_copy(
        f"INSERT INTO {topic} (campaign_id, qid, title, description, narrative, is_stub) "
        f"SELECT %s, qid, title, description, narrative, is_stub FROM {topic} WHERE campaign_id = %s",
        [clone.pk, source.pk],
    )
    rows_copy(
        f"INSERT INTO {document} (campaign_id, docno, title, text, url, length, is_stub) "
        f"SELECT %s, docno, title, text, url, length, is_stub FROM {document} WHERE campaign_id = %s",
        [clone.pk, source.pk],
    )
    now = timezone.now()
    runs = System.objects.filter(campaign=source)
    if not with_arrivals:
        runs = runs.filter(arrival__isnull=True)
    # A run left out has no system in the clone, so the lines below find none of its lines.
    for run in runs.order_by("pk"):
        System.objects.create(
            campaign=clone, name=run.name, filename=run.filename, evaluation_only=run.evaluation_only
        )
    # Each line of a run finds its new topic, document and system by qid, docno and name.
    rows_copy(
        f"INSERT INTO {entry} (system_id, topic_id, document_id, rank, score) "
        f"SELECT new_system.id, new_topic.id, new_document.id, e.rank, e.score FROM {entry} e "
        f"JOIN {system} old_system ON old_system.id = e.system_id AND old_system.campaign_id = %(source)s "
        f"JOIN {system} new_system ON new_system.campaign_id = %(clone)s "
        f"AND new_system.name = old_system.name " + clone_items_join("e"),
        {"source": source.pk, "clone": clone.pk},
    )
    # Imported qrels are a file the coordinator gave; the assessors' judgments stay behind.
    rows_copy(
        f"INSERT INTO {judgment} (campaign_id, topic_id, document_id, grade, seconds, cost, source, "
        f"created_at) SELECT %(clone)s, new_topic.id, new_document.id, j.grade, j.seconds, j.cost, "
        f"j.source, %(now)s FROM {judgment} j " + clone_items_join("j") + "WHERE j.campaign_id = %(source)s "
        "AND j.source = %(qrels)s",
        {"clone": clone.pk, "now": now, "source": source.pk, "qrels": Judgment.Source.QRELS},
    )


def _copy_priors(source: Campaign, clone: Campaign) -> None:
    """Prior grade probabilities (the labels upload) onto the clone's rebuilt pool."""
    priors = {
        (qid, docno): prior
        for qid, docno, prior in PoolItem.objects.filter(campaign=source, prior__isnull=False).values_list(
            "topic__qid", "document__docno", "prior"
        )
    }
    if not priors:
        return
    items = list(PoolItem.objects.filter(campaign=clone).select_related("topic", "document"))
    for item in items:
        item.prior = priors.get((item.topic.qid, item.document.docno))
    PoolItem.objects.bulk_update(
        [item for item in items if item.prior is not None], ["prior"], batch_size=2000
    )


@transaction.atomic
def campaign_clone(
    *, campaign: Campaign, creator: User, name: str | None = None, with_arrivals: bool = False
) -> Campaign:
    """A new draft with the campaign's settings, mode settings, uploaded files (topics, documents,
    runs, qrels, prior labels), members and the mode's own data (`JudgingMode.cloned`: gold
    questions, a feature pool), without any judgment or gold answer made in it. As it was before
    any run arrived (module docstring) unless `with_arrivals`."""
    settings = {field: getattr(campaign, field) for field in Campaign.SETTINGS}
    if not with_arrivals and campaign.arrivals.exists():
        settings["budget"] = budget_before_arrivals(campaign)
        arrived = set(campaign.arrivals.values_list("system__name", flat=True))
        if arrived & set(settings["focus_systems"] or []):
            settings["focus_systems"] = []  # the compared runs are chosen again, among those pooled
    clone = Campaign.objects.create(
        name=(name or f"{campaign.name} (copy)")[:200],
        created_by=creator,
        **settings,
    )
    CampaignProgress.objects.create(campaign=clone)
    CampaignMember.objects.bulk_create(
        [
            CampaignMember(campaign=clone, user_id=user_id, role=role)
            for user_id, role in campaign.members.values_list("user_id", "role")
        ]
    )
    CampaignMember.objects.get_or_create(
        campaign=clone, user=creator, defaults={"role": CampaignMember.Role.COORDINATOR}
    )
    mode = mode_of(campaign)
    own = mode.settings_of(campaign)
    mode.configure(clone, {name: own[name] for name in mode.setting_names if name in own})
    _copy_files(campaign, clone, with_arrivals=with_arrivals)
    if RankingEntry.objects.filter(system__campaign=clone).exists():
        pool_rebuild(campaign=clone)
        _copy_priors(campaign, clone)
    mode.cloned(campaign, clone)
    return clone


@transaction.atomic
def campaign_archive(*, campaign: Campaign, archived: bool = True) -> Campaign:
    """Put a campaign out of the work lists (a running one is paused first), or bring it back."""
    campaign = Campaign.objects.select_for_update(no_key=True).get(pk=campaign.pk)
    if archived and campaign.status == Campaign.Status.RUNNING:
        campaign = campaign_pause(campaign=campaign)
    campaign.archived_at = timezone.now() if archived else None
    campaign.save(update_fields=["archived_at", "updated_at"])
    return campaign


@transaction.atomic
def campaign_delete(*, campaign: Campaign) -> None:
    """Delete a campaign and everything in it (admins; the page offers the exports first)."""
    Campaign.objects.filter(pk=campaign.pk).delete()
