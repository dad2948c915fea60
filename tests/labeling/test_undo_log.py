"""The undo log every batched upload keeps (infrastructure.undo_log): each batch commits on its
own, and a failure before the end takes every batch back, latest first, whatever the step."""

from __future__ import annotations

import pytest

from infrastructure.undo_log import UndoLog
from labeling.models import Campaign, Topic

pytestmark = pytest.mark.postgresql


def test_a_failed_upload_gets_back_exactly_what_was_there(draft_campaign: Campaign) -> None:
    kept = Topic.objects.create(campaign=draft_campaign, qid="kept", title="old title")
    gone = Topic.objects.create(campaign=draft_campaign, qid="gone", title="deleted by the upload")
    before = sorted(Topic.objects.filter(campaign=draft_campaign).values_list("pk", "qid", "title"))
    order: list[str] = []
    with pytest.raises(ConnectionError), UndoLog() as log:
        log.call(lambda: order.append("first step, undone last"))
        new = Topic.objects.create(campaign=draft_campaign, qid="new", title="made by the upload")
        log.created(Topic, [new.pk])
        log.changed(Topic, ["title"], [[kept.pk, kept.title]])
        Topic.objects.filter(pk=kept.pk).update(title="new title")
        row = {"id": gone.pk, "campaign_id": draft_campaign.pk, "qid": "gone", "title": gone.title}
        log.deleted(Topic, [row])
        gone.delete()
        # A row the same upload made and then changed: written back, then deleted.
        log.changed(Topic, ["title"], [[new.pk, new.title]])
        Topic.objects.filter(pk=new.pk).update(title="changed again")
        log.call(lambda: order.append("last step, undone first"))
        raise ConnectionError("the database went away")
    assert sorted(Topic.objects.filter(campaign=draft_campaign).values_list("pk", "qid", "title")) == before
    assert order == ["last step, undone first", "first step, undone last"]


def test_an_upload_that_ends_keeps_what_it_stored(draft_campaign: Campaign) -> None:
    with UndoLog() as log:
        new = Topic.objects.create(campaign=draft_campaign, qid="new", title="made by the upload")
        log.created(Topic, [new.pk])
    assert Topic.objects.filter(pk=new.pk).exists() and log.values.closed
