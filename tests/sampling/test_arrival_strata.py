"""A run pooled into a campaign that has already drawn items: its new items join the pool with
the order of the last draw before them (`PoolItem.drawable_after`), and every estimate that
weighs them is made by strata (`estimation.sampling.arrivals`): the old items from every draw,
the new ones from the draws that could pick them. Runs pooled from the start keep the plain
estimators."""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Callable

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from estimation import Metric
from estimation.sampling.arrivals import stratified_estimate
from estimation.sampling.items import system_weights
from graded.exports import offline_bundle
from labeling.models import Campaign, Draw, Judgment, PoolItem, Task
from labeling.services.campaigns import campaign_assessors_assign, campaign_start, campaign_update
from sampling import judge_create, judge_labels_import
from sampling.estimates import estimates_compute
from sampling.pool_arrays import pool_arrays_for, pool_from_arrays
from tests.conftest import RUN_A, RUN_B, upload
from tests.sampling.helpers import RUN_C, judge_some, oracle_grade, within_its_interval_or_beyond_the_range
from uploads.run_imports import runs_import

Api = Callable[[AbstractBaseUser | None], APIClient]
# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


def _named(text: str, name: str) -> io.BytesIO:
    upload = io.BytesIO(text.encode())
    upload.name = name
    return upload


def test_a_run_pooled_after_draws_is_estimated_by_strata(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    created = api(coordinator).post(
        "/api/campaigns/",
        {"name": "arrival", "metric": "DCG@5", "grades": ["0", "1", "2"], "strategy": "items", "budget": 40},
        format="json",
    )
    campaign = Campaign.objects.get(pk=created.json()["id"])
    runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("b.run", RUN_B)])
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    campaign = campaign_start(campaign=campaign)
    judge_some(campaign, assessor, 12)
    last = Draw.objects.filter(campaign=campaign).order_by("-order").values_list("order", flat=True).first()
    assert last is not None and last >= 1
    assert set(PoolItem.objects.filter(campaign=campaign).values_list("drawable_after", flat=True)) == {0}

    runs_import(campaign=campaign, files=[upload("c.run", RUN_C)])
    new = PoolItem.objects.filter(campaign=campaign, document__docno__regex=r"-[89]$")
    assert new.count() == 6 and set(new.values_list("drawable_after", flat=True)) == {last}
    old = PoolItem.objects.filter(campaign=campaign).exclude(pk__in=new)
    assert set(old.values_list("drawable_after", flat=True)) == {0}
    # The offline ZIP carries it, so the stratified estimate can be recomputed from the export.
    with zipfile.ZipFile(io.BytesIO(offline_bundle(campaign))) as archive:
        pool = list(csv.DictReader(io.StringIO(archive.read("pool.csv").decode())))
    late = {row["docno"] for row in pool if row["drawable_after"] == str(last)}
    assert late == set(new.values_list("document__docno", flat=True))

    url = f"/api/campaigns/{campaign.pk}/estimates/"
    before = {
        row["name"]: row for row in api(coordinator).get(url).json()["systems"] if row["metric"] == "DCG@5"
    }
    assert before["gamma"]["value"] is None, "its new items have no draw yet: no value, not a low one"
    assert before["alpha"]["value"] is not None

    judge_some(campaign, assessor, 25)
    rows = {
        row["name"]: row for row in api(coordinator).get(url).json()["systems"] if row["metric"] == "DCG@5"
    }
    # The same number from the stored draws, by hand: the old stratum from every counted draw,
    # the new one from the draws after `last`.
    arrays = pool_arrays_for(Campaign.objects.get(pk=campaign.pk))
    metric = Metric.parse("DCG@5", y_max=2)
    gamma = system_weights(pool_from_arrays(arrays), metric, arrays.system_names.index("gamma"))
    # The draws that count: their item judged and no task of it open (queued draws wait).
    judged = set(Judgment.objects.filter(campaign=campaign).values_list("topic_id", "document_id"))
    waiting = set(
        Task.objects.filter(campaign=campaign, answered_at__isnull=True).values_list(
            "topic_id", "document_id"
        )
    )
    draws = [
        draw
        for draw in Draw.objects.filter(campaign=campaign)
        .order_by("order")
        .values_list("topic_id", "document__docno", "document_id", "propensity", "order")
        if (draw[0], draw[2]) in judged and (draw[0], draw[2]) not in waiting
    ]
    topic, slot = arrays.locate(np.array([d[0] for d in draws]), np.array([d[2] for d in draws]))
    gains = metric.gain_table()
    located = list(zip(draws, topic, slot, strict=True))
    terms = [
        np.array([
            gamma[t, s] * (arrays.drawable_after[t, s] == after) * gains[oracle_grade(doc)] / q
            for (_, doc, _, q, order), t, s in located
            if order > after
        ])
        for after in (0, last)
    ]  # fmt: skip
    new_hits = sum(
        1
        for (_, _, _, _, order), t, s in located
        if order > last and arrays.drawable_after[t, s] == last and gamma[t, s]
    )
    if new_hits < 1:  # no draw of its new items yet: no value (MIN_STRATUM_DRAWS)
        assert rows["gamma"]["value"] is None
        return
    expected = stratified_estimate(terms)
    assert rows["gamma"]["value"] == pytest.approx(expected.value)
    assert rows["gamma"]["se"] == pytest.approx(expected.standard_error)
    assert rows["gamma"]["intervals"]["hoeffding"] is None  # only the stratified Student interval
    # The same ranking evaluated on the stored draws ("Evaluate a new run") gets the same strata.
    twin = api(coordinator).post(
        f"/api/campaigns/{campaign.pk}/evaluate/",
        {"file": _named(RUN_C.replace("gamma", "gamma-twin"), "twin.run")},
        format="multipart",
    )
    assert twin.status_code == 201, twin.content
    (evaluated,) = twin.json()
    assert evaluated["value"] == pytest.approx(rows["gamma"]["value"]) and evaluated["unreachable_share"] == 0
    assert rows["alpha"]["intervals"]["hoeffding"] is not None  # the plain estimator, as before


def test_the_judged_strategy_certifies_a_run_pooled_after_draws_by_strata(
    draft_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    campaign_update(campaign=draft_campaign, budget=30, strategy="judged")
    judge = judge_create(campaign=draft_campaign, name="lenient")
    labels = "".join(
        f"{q} 0 d{q}-{d} {min(oracle_grade(f'd{q}-{d}') + 1, 2)}\n" for q in (1, 2, 3) for d in range(1, 10)
    )
    judge_labels_import(judge=judge, files=[upload("judge.txt", labels)])
    campaign_assessors_assign(campaign=draft_campaign, usernames=[assessor.get_username()])
    campaign = campaign_start(campaign=draft_campaign)
    judge_some(campaign, assessor, 10)
    runs_import(campaign=campaign, files=[upload("c.run", RUN_C)])
    judge_some(campaign, assessor, 20)
    result = estimates_compute(Campaign.objects.get(pk=campaign.pk))
    rows = {row["name"]: row for row in result["systems"] if row["metric"] == "DCG@5"}
    gamma, alpha = rows["gamma"], rows["alpha"]
    new_judged = Judgment.objects.filter(campaign=campaign, document__docno__regex=r"-[89]$").count()
    if new_judged < 1:  # no draw of its new items yet: no value (MIN_STRATUM_DRAWS)
        assert gamma["value"] is None
        return
    assert gamma["value"] is not None
    bounds = Metric.parse("DCG@5", y_max=2).value_bounds()
    assert within_its_interval_or_beyond_the_range(gamma["value"], gamma["low"], gamma["high"], bounds)
    assert gamma["judge_only"] is not None
    # The judge's worth is a plain estimator's effective size: not reported for a stratified one.
    assert gamma["draws_without_judge"] is None and alpha["draws_without_judge"] is not None
