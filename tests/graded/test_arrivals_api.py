"""A run that arrives in a campaign that has drawn (POST /api/campaigns/{id}/arrivals/): it joins
the pool, the campaign's budget grows by the top-up, the top-up is drawn where its difference with
the reference is uncertain, and GET .../arrivals/{a}/ reports its estimate, the difference with an
interval and how much of its weight no draw could reach yet. Bad input is refused with its reason
and stores nothing."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Callable

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from rest_framework.test import APIClient

from estimation import Metric
from estimation.formats.trec import iter_run, run_from_lines
from estimation.sampling.arrivals import stratified_estimate
from graded.claims import task_next
from graded.exports import offline_bundle
from graded.judging import task_answer
from labeling.models import Arrival, Campaign, Draw, Judgment, PoolItem, System, Task
from labeling.recompute import recompute
from labeling.services.campaigns import campaign_assessors_assign, campaign_start, campaign_update
from sampling import judge_create, judge_labels_import, judge_run_step
from sampling.arrival_design import arrival_topup_design
from sampling.arrivals import TOPUP_PLAN_MAX_DRAWS
from sampling.level_estimates import topic_metric_values
from sampling.models import JudgeRun
from sampling.pool_arrays import pool_arrays_for, pool_from_arrays
from tests.conftest import upload
from tests.graded.helpers import RUN_ALPHA_AGAIN, RUN_POOR, arrive, judge_all, running
from tests.sampling.helpers import (
    RUN_C,
    oracle_grade,
    run_to_end,
    texts_import,
    within_its_interval_or_beyond_the_range,
)
from uploads.imports import documents_import

Api = Callable[[AbstractBaseUser | None], APIClient]
# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


def _new_documents_judged(campaign: Campaign) -> int:
    """Judgments of the documents only the arriving run (RUN_C) retrieved."""
    return Judgment.objects.filter(campaign=campaign, document__docno__regex=r"-[89]$").count()


def test_a_difference_beyond_the_range_is_told_apart_from_one_outside_its_interval() -> None:
    most = Metric.parse("DCG@5", y_max=2).value_bounds()[1]
    bounds = (-most, most)
    assert within_its_interval_or_beyond_the_range(1.0, 0.5, 1.5, bounds)
    assert within_its_interval_or_beyond_the_range(most + 1.0, 0.5, most, bounds)
    assert within_its_interval_or_beyond_the_range(-most - 1.0, -most, 0.5, bounds)
    assert not within_its_interval_or_beyond_the_range(2.0, 0.5, 1.5, bounds), "inside the range: a fault"
    with pytest.raises(AssertionError):
        within_its_interval_or_beyond_the_range(most + 1.0, most + 0.5, most + 1.5, bounds)


def test_a_run_arrives_gets_its_topup_and_its_difference_with_an_interval(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    assert judge_all(campaign, assessor) == 12
    # Read once at the end (the fixed rule): the whole top-up is judged.
    created = arrive(api, coordinator, campaign, budget="10", reference="beta", rule="fixed")
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["system"], body["reference"], body["status"]) == ("gamma", "beta", "judging")
    assert body["new_items"] == 6 and body["new_judged"] == 0
    assert body["topup_budget"] == 10 and body["topup_judged"] == 0
    assert (body["horizon_unit"], body["horizon"]) == ("labels", 10), "one label a draw at item level"
    assert body["unreachable_share"] > 0, "its new documents have no draw yet"
    assert body["difference"]["value"] is None, "no value rather than a low one"
    campaign.refresh_from_db()
    assert campaign.budget == 22 and campaign.status == Campaign.Status.RUNNING

    # The top-up is drawn from the top-up design, which puts its mass on the new documents (6 of
    # the pool's items) and keeps every pooled one drawable.
    arrays = pool_arrays_for(campaign)
    metric = Metric.parse("DCG@5", y_max=2)
    design = arrival_topup_design(campaign, arrays, pool_from_arrays(arrays), metric)
    assert design is not None and np.all(design.q[arrays.slot_used] > 0)
    new_slots = arrays.slot_used & (arrays.drawable_after > 0)
    old_slots = arrays.slot_used & ~new_slots
    # Each new document is several times as likely as an old one (about half the mass on 6 of 30).
    assert new_slots.sum() == 6 and design.q[new_slots].mean() > 3 * design.q[old_slots].mean()
    boundary = Arrival.objects.get(pk=body["id"]).drawable_after
    assert judge_all(campaign, assessor) >= 1
    first = Draw.objects.filter(campaign=campaign, order__gt=boundary).order_by("order").first()
    assert first is not None
    topic, slot = arrays.locate(np.array([first.topic_id]), np.array([first.document_id]))
    assert first.propensity == pytest.approx(design.q[topic[0], slot[0]])

    url = f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/"
    after = api(coordinator).get(url).json()
    assert after["status"] == "done" and after["topup_judged"] >= 10
    assert after["unreachable_share"] == 0
    difference = after["difference"]
    # One of its new documents drawn gives its stratum a variance (MIN_STRATUM_DRAWS): a value.
    assert after["new_judged"] == _new_documents_judged(campaign) >= 1, "the design puts most mass on them"
    low, value, high = difference["low"], difference["value"], difference["high"]
    most = Metric.parse("DCG@5", y_max=2).value_bounds()[1]
    assert within_its_interval_or_beyond_the_range(value, low, high, (-most, most))
    assert difference["se"] > 0
    assert 0.5 <= after["order_right"] <= 1
    assert after["estimate"]["value"] is not None
    listed = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/").json()
    assert [row["id"] for row in listed] == [body["id"]]
    # The offline ZIP carries it with the boundary of its draws.
    with zipfile.ZipFile(io.BytesIO(offline_bundle(campaign))) as archive:
        (exported,) = json.loads(archive.read("arrivals.json"))
        draws = list(csv.DictReader(io.StringIO(archive.read("draws.csv").decode())))
        recomputed = _offline_difference(archive, "gamma", "beta")
    assert exported["system"] == "gamma" and exported["drawable_after"] == boundary
    # ... and recomputes the arrival's difference with the estimation package alone.
    assert recomputed == pytest.approx(exported["difference"]["value"])
    # Each item draw carries its item's stratum: the new documents' is the arrival's boundary.
    strata = {row["docno"]: row["drawable_after"] for row in draws}
    assert all(strata[docno] == str(boundary) for docno in strata if docno[-2:] in ("-8", "-9"))
    assert any(docno[-2:] in ("-8", "-9") for docno in strata)
    assert all(strata[docno] == "0" for docno in strata if docno[-2:] not in ("-8", "-9"))
    assert exported["difference"] == difference
    assert (
        api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id'] + 99}/").status_code == 404
    )


def _offline_difference(archive: zipfile.ZipFile, system: str, reference: str) -> float:
    """An arrival's difference from the offline ZIP only: the runs give DCG@5's weights, the
    qrels the grades, draws.csv each item draw's propensity and stratum (drawable_after), and the
    stratified estimator of `estimation.sampling.arrivals` does the rest."""
    metric = Metric.parse("DCG@5", y_max=2)
    gains = metric.gain_table()
    qrels = {
        (qid, docno): int(grade)
        for qid, _, docno, grade in (line.split() for line in archive.read("qrels.txt").decode().splitlines())
    }
    rankings = {
        name: run_from_lines(iter_run(archive.read(f"runs/{name}.run").decode().splitlines()))
        for name in (system, reference)
    }
    topics = {row["topic"] for row in csv.DictReader(io.StringIO(archive.read("pool.csv").decode()))}
    weight: dict[tuple[str, str], float] = {}
    for sign, name in ((1.0, system), (-1.0, reference)):
        for qid, docnos in rankings[name].rankings.items():
            for rank, docno in enumerate(docnos[:5], start=1):
                weight[qid, docno] = weight.get((qid, docno), 0.0) + sign / np.log2(rank + 1) / len(topics)
    draws = [
        row
        for row in csv.DictReader(io.StringIO(archive.read("draws.csv").decode()))
        if (row["topic"], row["docno"]) in qrels
    ]
    boundaries = sorted({int(row["drawable_after"]) for row in draws})
    terms = []
    for boundary in boundaries:
        later = [row for row in draws if int(row["order"]) > boundary]
        terms.append(
            np.array(
                [
                    weight.get((row["topic"], row["docno"]), 0.0)
                    * (int(row["drawable_after"]) == boundary)
                    * gains[qrels[row["topic"], row["docno"]]]
                    / float(row["propensity"])
                    for row in later
                ]
            )
        )
    return stratified_estimate(terms).value


def test_a_target_width_gets_a_planned_budget(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    wide = arrive(api, coordinator, campaign, target_width="8", reference="beta")
    assert wide.status_code == 201, wide.content
    body = wide.json()
    assert body["target_width"] == 8 and body["planned_width"] <= 8
    assert body["topup_budget"] >= 2 and body["topup_budget"] == int(body["topup_budget"])
    campaign.refresh_from_db()
    assert campaign.budget == 12 + body["topup_budget"]
    # A narrower width needs more labels; one the planner's cap cannot reach says what it reaches.
    narrow = arrive(api, coordinator, campaign, RUN_D, target_width="2", reference="beta").json()
    assert narrow["topup_budget"] > body["topup_budget"]
    tiny = arrive(
        api, coordinator, campaign, RUN_D.replace("delta", "epsilon"), target_width="0.001", reference="beta"
    ).json()
    # The cap is in draws; the budget pays for the distinct documents they are expected to label.
    assert Arrival.objects.get(pk=tiny["id"]).topup_draws == min(
        TOPUP_PLAN_MAX_DRAWS, 100 * PoolItem.objects.filter(campaign=campaign).count()
    )
    assert tiny["planned_width"] > 0.001
    assert tiny["topup_budget"] <= PoolItem.objects.filter(campaign=campaign).count()
    both = arrive(api, coordinator, campaign, RUN_D.replace("delta", "zeta"), budget="3", target_width="2")
    assert both.status_code == 400
    assert "give either a top-up or the 95 % interval width" in both.content.decode()


def test_the_reference_defaults_to_the_best_current_estimate(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    rows = api(coordinator).get(f"/api/campaigns/{campaign.pk}/estimates/").json()["systems"]
    best = max((row for row in rows if row["metric"] == "DCG@5"), key=lambda row: row["value"])["name"]
    created = arrive(api, coordinator, campaign, budget="4")
    assert created.status_code == 201 and created.json()["reference"] == best


def test_bad_arrivals_are_refused_with_the_reason_and_store_nothing(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    draft = running(api, coordinator, assessor, "items", start=False)
    refused = arrive(api, coordinator, draft, budget="5")
    assert refused.status_code == 400 and "nothing was drawn yet" in refused.content.decode()
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    cases = [
        ({"budget": "5", "reference": "omega"}, RUN_C, "'omega' is not a pooled run"),
        ({"budget": "0"}, RUN_C, "top-up budget must be above 0, got 0"),
        ({"budget": "-3"}, RUN_C, "top-up budget must be above 0, got -3"),
        ({"budget": "2.5"}, RUN_C, "a top-up in judgments is a whole number, got 2.5"),
        ({"budget": "5", "target_width": "0.5"}, RUN_C, "give either a top-up or the 95 % interval width"),
        ({"budget": "5"}, "1 Q0 d1-8 1 x gamma\n", "c.run"),  # a malformed score: file and line
    ]
    for fields, text, reason in cases:
        response = arrive(api, coordinator, campaign, text, **fields)
        assert response.status_code == 400 and reason in response.content.decode(), response.content
    assert not Arrival.objects.exists() and not System.objects.filter(name="gamma").exists()
    assessor_call = arrive(api, assessor, campaign, budget="5")
    assert assessor_call.status_code == 403, "a member whose role may not manage (labeling/access.py)"


def test_a_judge_assisted_campaign_counts_the_new_pairs_its_uploaded_judge_has_no_label_for(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    campaign_update(campaign=draft_campaign, budget=12, strategy="judged")
    judge = judge_create(campaign=draft_campaign, name="lenient")
    labels = "".join(
        f"{q} 0 d{q}-{d} {min(oracle_grade(f'd{q}-{d}') + 1, 2)}\n" for q in (1, 2, 3) for d in range(1, 8)
    )
    judge_labels_import(judge=judge, files=[upload("judge.txt", labels)])
    campaign_assessors_assign(campaign=draft_campaign, usernames=[assessor.get_username()])
    campaign = campaign_start(campaign=draft_campaign)
    judge_all(campaign, assessor, recompute_each=False)
    created = arrive(api, coordinator, campaign, budget="6", reference="alpha")
    assert created.status_code == 201, created.content
    body = created.json()
    # An uploaded judge does not run: the top-up starts at once, and the report says what to upload.
    assert body["status"] == "judging" and body["judge_missing"] == 6
    judge_labels_import(
        judge=judge,
        files=[upload("more.txt", "".join(f"{q} 0 d{q}-{d} 1\n" for q in (1, 2, 3) for d in (8, 9)))],
    )
    # The report's figures are the worker's, as of its last recompute (an upload queues one).
    recompute(campaign.pk)
    again = api(coordinator).get(f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/").json()
    assert again["judge_missing"] == 0


def test_a_running_judge_labels_the_new_pairs_before_the_topup_is_drawn(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    texts_import(draft_campaign)
    campaign_update(campaign=draft_campaign, budget=12, strategy="judged")
    judge = judge_create(campaign=draft_campaign, name="bm25", kind="lexical")
    assert run_to_end(judge).labels == 21
    campaign_assessors_assign(campaign=draft_campaign, usernames=[assessor.get_username()])
    campaign = campaign_start(campaign=draft_campaign)
    judge_all(campaign, assessor, recompute_each=False)
    new_texts = [
        {"docno": f"d{q}-{d}", "title": "", "text": "filler text"} for q in (1, 2, 3) for d in (8, 9)
    ]
    documents_import(
        campaign=campaign,
        files=[("new.jsonl", io.BytesIO("".join(json.dumps(d) + "\n" for d in new_texts).encode()))],
    )
    body = arrive(api, coordinator, campaign, budget="6", reference="alpha").json()
    assert body["status"] == "labelling" and body["judge_missing"] == 6
    # The top-up waits for the judge's labels of the new documents.
    assert task_next(campaign=campaign, assessor=assessor) is None
    run = JudgeRun.objects.get(judge=judge, status__in=JudgeRun.ACTIVE)
    while judge_run_step(run.pk) == "more":
        pass
    run.refresh_from_db()
    assert run.labels == 6, "the cache answered the 21 pairs it had labelled"
    url = f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/"
    assert api(coordinator).get(url).json()["status"] == "judging"
    assert judge_all(campaign, assessor) >= 1
    done = api(coordinator).get(url).json()
    assert done["status"] == "done" and done["judge_missing"] == 0
    if _new_documents_judged(campaign) >= 1:  # a top-up of 6: its stratum may still lack a variance
        assert done["difference"]["value"] is not None


def test_a_query_level_campaign_judges_the_runs_documents_on_the_drawn_topics_first(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "passive")
    judge_all(campaign, assessor, recompute_each=False)
    drawn = set(Draw.objects.filter(campaign=campaign).values_list("topic_id", flat=True))
    assert drawn, "the budget of 12 draws at least one topic of 7 documents"
    completion = 2 * len(drawn)  # RUN_C brings d?-8 and d?-9 to every topic
    # The cost of judging them is known before anything is stored: a smaller top-up is refused.
    short = arrive(api, coordinator, campaign, budget=str(completion - 1), reference="beta")
    assert short.status_code == 400, short.content
    assert f"at least {completion}" in short.content.decode()
    assert not System.objects.filter(campaign=campaign, name="gamma").exists()
    assert not Arrival.objects.exists()

    created = arrive(api, coordinator, campaign, budget=str(completion + 7), reference="beta")
    assert created.status_code == 201, created.content
    body = created.json()
    # Whole topics are drawn: the horizon counts topics, not labels (the budget buys fewer).
    assert body["horizon_unit"] == "topics" and 1 <= body["horizon"] <= len(drawn) + 7
    assert body["status"] == "judging" and body["new_items"] == 6
    assert body["waiting_items"] == completion and body["unreachable_share"] > 0
    assert body["difference"]["value"] is None, "its drawn topics wait for their new documents"
    # The estimates say that draws were made which do not count yet (not a silent dash).
    estimates = api(coordinator).get(f"/api/campaigns/{campaign.pk}/estimates/").json()
    assert estimates["draws_made"] == Draw.objects.filter(campaign=campaign).count()
    assert estimates["draws"] < estimates["draws_made"], estimates
    # The completion is served first: its tasks hang on the topics' first draws.
    for _ in range(completion):
        task = task_next(campaign=campaign, assessor=assessor)
        assert task is not None and task.document.docno[-2:] in ("-8", "-9")
        assert task.topic_id in drawn
        task_answer(task=task, assessor=assessor, grade=oracle_grade(task.document.docno), seconds=2.0)
    recompute(campaign.pk)
    url = f"/api/campaigns/{campaign.pk}/arrivals/{body['id']}/"
    completed = api(coordinator).get(url).json()
    assert completed["waiting_items"] == 0 and completed["unreachable_share"] == 0
    assert completed["difference"]["reliable"] in (True, False) and completed["difference"]["reliable_from"]
    assert completed["topup_judged"] == completion
    # The difference is the plain topic estimator over the draws of fully judged topics:
    # (1/n) sum delta_t / (m q_t).
    campaign.refresh_from_db()
    arrays = pool_arrays_for(campaign)
    metric = Metric.parse("DCG@5", y_max=2)
    judged = np.array(
        list(Judgment.objects.filter(campaign=campaign).values_list("topic_id", "document_id", "grade"))
    )
    grades = np.full(arrays.slot_used.shape, -1)
    topic, slot = arrays.locate(judged[:, 0], judged[:, 1])
    grades[topic, slot] = judged[:, 2]
    open_topics = set(
        Task.objects.filter(campaign=campaign, answered_at=None).values_list("topic_id", flat=True)
    )
    complete = [
        (~arrays.slot_used[t] | (grades[t] >= 0)).all() and int(topic_id) not in open_topics
        for t, topic_id in enumerate(arrays.topic_ids)
    ]
    names = list(arrays.system_names)
    delta = topic_metric_values(arrays, grades, metric, names.index("gamma")) - topic_metric_values(
        arrays, grades, metric, names.index("beta")
    )
    position = {int(topic_id): t for t, topic_id in enumerate(arrays.topic_ids)}
    terms = [
        delta[position[topic]] / (arrays.n_topics * q)
        for topic, q in Draw.objects.filter(campaign=campaign).values_list("topic_id", "propensity")
        if complete[position[topic]]
    ]
    expected = np.mean(terms)
    assert completed["difference"]["value"] == pytest.approx(expected)
    assert judge_all(campaign, assessor) >= 1, "the rest of the top-up draws new topics"
    done = api(coordinator).get(url).json()
    assert done["status"] == "done" and done["topup_spent"] >= completion + 7


def test_the_dashboard_offers_the_arrival_form_to_its_coordinators(
    client: Client, api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    for strategy in ("items", "passive"):
        campaign = running(api, coordinator, assessor, strategy)
        client.force_login(coordinator)
        page = client.get(f"/campaigns/{campaign.pk}/dashboard/").content.decode()
        assert 'id="arrival-form"' in page and '<option value="alpha">alpha</option>' in page
        client.force_login(assessor)
        watched = client.get(f"/campaigns/{campaign.pk}/dashboard/")
        # A member without the right to see results: 403 (access.campaign_for_page), no form.
        assert watched.status_code == 403 and 'id="arrival-form"' not in watched.content.decode()


def test_the_campaign_page_adds_an_arrival_and_says_why_when_it_refuses(
    client: Client, api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    draft = running(api, coordinator, assessor, "items", start=False)
    client.force_login(coordinator)
    assert 'id="arrival-title"' not in client.get(f"/campaigns/{draft.pk}/").content.decode(), "no draw yet"
    campaign = running(api, coordinator, assessor, "items")
    client.force_login(assessor)
    assert 'id="arrival-title"' not in client.get(f"/campaigns/{campaign.pk}/").content.decode()
    client.force_login(coordinator)
    judge_all(campaign, assessor, recompute_each=False)
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert 'id="arrival-title"' in page and 'data-upload="arrival"' in page and "target_width" in page
    url = f"/campaigns/{campaign.pk}/arrivals/"

    def post(text: str, **fields: str):  # noqa: ANN202
        body = io.BytesIO(text.encode())
        body.name = "c.run"
        return client.post(url, {"file": body, **fields}, follow=True)

    refused = post("1 Q0 d1-8 1 x gamma\n", budget="4")
    assert refused.redirect_chain[-1][0].endswith(f"/campaigns/{campaign.pk}/"), "where the message is"
    assert "The run was not added: c.run line 1" in refused.content.decode()
    no_topup = post(RUN_C)
    assert "give either a top-up or the 95 % interval width" in no_topup.content.decode()
    assert not Arrival.objects.exists()
    added = post(RUN_C, budget="5", reference="alpha")
    assert added.redirect_chain[-1][0].endswith(f"/campaigns/{campaign.pk}/dashboard/#arrivals-panel")
    assert "gamma arrived, compared with alpha: a top-up of 5 judgments" in added.content.decode()
    arrival = Arrival.objects.get()
    assert (arrival.system.name, arrival.reference.name, arrival.topup_budget) == ("gamma", "alpha", 5)


# A second run that arrives after RUN_C: it shares RUN_C's new d?-8 and brings its own d?-10.
RUN_D = "".join(
    f"{q} Q0 {doc} {rank} {10 - rank}.0 delta\n"
    for q in (1, 2, 3)
    for rank, doc in enumerate((f"d{q}-10", f"d{q}-8", f"d{q}-2", f"d{q}-5", f"d{q}-3"), start=1)
)


def test_runs_arriving_one_after_another_keep_every_page_answering_at_every_step(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    first = arrive(api, coordinator, campaign, budget="3", reference="alpha").json()
    second = arrive(api, coordinator, campaign, RUN_D, budget="6", reference="gamma").json()
    assert second["reference"] == "gamma" and second["new_items"] == 3  # its d?-10; d?-8 came first
    urls = [
        f"/api/campaigns/{campaign.pk}/estimates/",
        f"/api/campaigns/{campaign.pk}/arrivals/",
        f"/api/campaigns/{campaign.pk}/arrivals/{first['id']}/",
    ]
    # Every step of the top-ups: a late stratum may be drawn before an earlier one; no page fails.
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=oracle_grade(task.document.docno), seconds=2.0)
        recompute(campaign.pk)
        for url in urls:
            assert api(coordinator).get(url).status_code == 200, url
    rows = {row["system"]: row for row in api(coordinator).get(urls[1]).json()}
    assert set(rows) == {"gamma", "delta"} and all(row["status"] == "done" for row in rows.values())


def test_the_arrivals_list_reads_stored_reports_in_queries_that_do_not_grow_with_decided_arrivals(
    api: Api, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    campaign = running(api, coordinator, assessor, "items")
    judge_all(campaign, assessor, recompute_each=False)
    first = arrive(api, coordinator, campaign, RUN_POOR, budget="200", reference="alpha").json()
    judge_all(campaign, assessor, recompute_each=False)
    url = f"/api/campaigns/{campaign.pk}/arrivals/"
    client = api(coordinator)
    client.get(url)  # the first read after an arrival stores what is missing
    with CaptureQueriesContext(connection) as one:
        listed = client.get(url).json()
    assert [row["verdict"] for row in listed] == ["worse"] and listed[0]["report_at"] is not None
    # The worker's figures are the live computation's, as of its last recompute.
    stored = Arrival.objects.get(pk=first["id"]).report
    assert stored["difference"] == listed[0]["difference"] and stored["difference"]["value"] < 0
    for number in range(2):  # identical releases: decided at once, stored when they arrive
        text = RUN_ALPHA_AGAIN.replace(" alpha2\n", f" same{number}\n")
        assert arrive(api, coordinator, campaign, text, budget="5", reference="alpha").status_code == 201
    with CaptureQueriesContext(connection) as three:
        listed = client.get(url).json()
    assert [row["verdict"] for row in listed] == ["worse", "unchanged", "unchanged"]
    assert len(three.captured_queries) == len(one.captured_queries), "no recompute per arrival"
