"""Strategies, the label and cost models, the recompute pipeline, new-run evaluation, the REST
additions and the offline bundle."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Callable

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from estimation.metrics.spec import Metric
from estimation.metrics.values import dcg
from estimation.sampling.estimators import query_level_estimate
from graded.claims import task_next
from graded.judging import task_answer
from labeling.import_reports import ImportFailed
from labeling.models import Campaign, Document, Draw, Judgment, Task
from labeling.modes import campaign_progress
from labeling.recompute import recompute
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_create,
    campaign_start,
    campaign_update,
)
from sampling import exports
from sampling.estimates import estimates_current
from sampling.label_model import cost_model_fit, item_features, judged_grades, label_model_fit
from sampling.models import EstimateSnapshot, SamplingState
from sampling.pool_arrays import pool_arrays_for
from sampling.state import state_load
from tests.conftest import RUN_A, RUN_B, upload
from uploads.imports import labels_import
from uploads.run_imports import runs_import

Api = Callable[[AbstractBaseUser | None], APIClient]


def _judge(
    campaign: Campaign, assessor: AbstractBaseUser, grade_of: Callable[[Task], int], limit: int = 1000
) -> int:
    answered = 0
    while answered < limit and (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=grade_of(task), seconds=3.0)
        answered += 1
    return answered


def _grade(task: Task) -> int:
    """A deterministic oracle for the toy runs: documents d?-1 .. d?-3 are relevant."""
    number = int(task.document.docno.rsplit("-", 1)[1])
    return 2 if number == 1 else 1 if number <= 3 else 0


@pytest.mark.parametrize(
    "strategy", ["passive", "active", "active_uniform_labels", "active_uniform_costs", "items"]
)
def test_it_stores_the_propensity_of_the_distribution_in_force(
    strategy: str, draft_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    campaign_update(campaign=draft_campaign, strategy=strategy, budget=30)
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    _judge(campaign, assessor, _grade, limit=6)
    recompute(campaign.pk)
    state = state_load(SamplingState.objects.get(campaign=campaign))
    arrays = pool_arrays_for(campaign)
    assert np.isclose(state.q.sum(), 1.0) and np.all(state.q >= 0)
    versions = {}
    for draw in Draw.objects.filter(campaign=campaign):
        versions.setdefault(draw.sampling_version, []).append(draw)
    assert versions
    latest = [draw for draw in versions.get(state.record.version, [])]
    for draw in latest:
        (t,) = np.flatnonzero(arrays.topic_ids == draw.topic_id)
        if strategy == "items":
            assert draw.kind == "item"
            slot = arrays.docnos[t].index(draw.document.docno)
            assert draw.propensity == pytest.approx(state.q[t, slot])
        else:
            assert draw.kind == "query" and draw.document is None
            assert draw.propensity == pytest.approx(state.q[t])
    if strategy == "passive":
        assert np.allclose(state.q, 1 / arrays.n_topics)


def test_it_refuses_item_level_sampling_for_metrics_that_are_not_linear(
    coordinator: AbstractBaseUser,
) -> None:
    for metric in ("ERR@5", "nDCG@5"):
        with pytest.raises(ValueError, match="estimates DCG only"):
            campaign_create(creator=coordinator, name="x", metric=metric, strategy="items", budget=5)
    with pytest.raises(ValueError, match="unknown strategy"):
        campaign_create(creator=coordinator, name="x", strategy="clairvoyant", budget=5)


def test_it_builds_label_model_features_from_the_runs(draft_campaign: Campaign) -> None:
    arrays = pool_arrays_for(draft_campaign)
    features = item_features(arrays, cutoff=5)
    assert features.shape == (3, 7, 2 * 2 + 2)
    alpha_discount, alpha_z, beta_discount, beta_z, in_top, log_length = np.moveaxis(features, -1, 0)
    docnos = arrays.docnos[0]
    first, seventh = docnos.index("d1-1"), docnos.index("d1-7")
    # alpha ranks d1-1 first (discount 1) and never ranks d1-7; beta ranks d1-7 last of five.
    assert alpha_discount[0, first] == pytest.approx(1.0) and alpha_discount[0, seventh] == 0.0
    assert beta_discount[0, seventh] == pytest.approx(1 / np.log2(6))
    assert in_top[0, docnos.index("d1-4")] == 2 and in_top[0, first] == 1
    ranked = alpha_discount[0] > 0
    assert alpha_z[0, ranked].mean() == pytest.approx(0.0, abs=1e-12) and alpha_z[0, first] > 0
    assert np.all(log_length == 0)  # no document lengths known


def test_it_starts_from_the_prior_and_learns_from_judgments(
    campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    arrays = pool_arrays_for(campaign)
    features = item_features(arrays, cutoff=5)
    grades = judged_grades(campaign, arrays)
    theta, parameters = label_model_fit(campaign, arrays, grades, features)
    assert parameters["kind"] == "prior" and np.allclose(theta[arrays.slot_used], 1 / 3)
    _judge(campaign, assessor, _grade, limit=14)
    grades = judged_grades(campaign, arrays)
    theta, parameters = label_model_fit(campaign, arrays, grades, features)
    judged = grades >= 0
    assert parameters["kind"] == "ordinal" and parameters["n_labels"] == judged.sum() == 14
    assert np.allclose(theta[judged], np.eye(3)[grades[judged]])
    unjudged = arrays.slot_used & ~judged
    top_ranked = np.zeros_like(unjudged)
    for t, docnos in enumerate(arrays.docnos):
        top_ranked[t, docnos.index(f"d{arrays.topic_qids[t]}-1")] = True
    # The oracle made alpha's first document the best: the model expects more of it.
    expected = theta @ np.arange(3)
    if (unjudged & top_ranked).any() and (unjudged & ~top_ranked).any():
        assert expected[unjudged & top_ranked].mean() > expected[unjudged & ~top_ranked].mean()


def test_it_uses_imported_priors_as_each_items_default(draft_campaign: Campaign) -> None:
    labels = "1 d1-1 0.0 0.0 1.0\n1 d1-2 0.5 0.5 0.0\nnot-pooled zz 1 0 0\n"
    report = labels_import(campaign=draft_campaign, files=[upload("labels.tsv", labels)])
    assert (report.lines, report.updated) == (3, 2)
    arrays = pool_arrays_for(draft_campaign)
    theta, _ = label_model_fit(
        draft_campaign, arrays, judged_grades(draft_campaign, arrays), item_features(arrays, 5)
    )
    t = arrays.topic_qids.index("1")
    assert theta[t, arrays.docnos[t].index("d1-1")] == pytest.approx([0, 0, 1])
    assert theta[t, arrays.docnos[t].index("d1-3")] == pytest.approx([1 / 3] * 3)
    with pytest.raises(ImportFailed, match="expected 3 probabilities"):
        labels_import(campaign=draft_campaign, files=[upload("bad.tsv", "1 d1-1 0.5 0.5\n")])


def test_it_switches_from_the_length_model_to_the_fitted_cost_model(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = campaign_create(
        creator=coordinator, name="costs", metric="DCG@10", strategy="items", budget=60, budget_unit="cost"
    )
    run = "".join(f"{q} Q0 q{q}d{d} {d} {50 - d} r\n" for q in range(1, 5) for d in range(1, 11))
    runs_import(campaign=campaign, files=[upload("r.run", run)])
    for document in Document.objects.filter(campaign=campaign):
        document.length = 10 * int(document.docno.split("d")[-1]) ** 2
        document.save()
    Campaign.objects.filter(pk=campaign.pk).update(pool_version=campaign.pool_version + 1)
    campaign.refresh_from_db()
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    campaign = campaign_start(campaign=campaign)
    arrays = pool_arrays_for(campaign)
    costs, model = cost_model_fit(campaign, arrays)
    assert model["kind"] == "log_length" and costs[arrays.slot_used].mean() == pytest.approx(1.0)
    longest = arrays.lengths == np.nanmax(arrays.lengths)
    assert costs[longest].min() > costs[arrays.slot_used].min()
    answered = 0
    while answered < 30 and (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        seconds = 4.0 + 2.5 * np.log1p(task.document.length)  # the assessor's true timing
        task_answer(task=task, assessor=assessor, grade=1, seconds=float(seconds))
        answered += 1
    assert answered == 30
    costs, model = cost_model_fit(campaign, arrays)
    assert model["kind"] == "fitted" and model["n_points"] == 30
    assert (model["a"], model["b"]) == (pytest.approx(4.0), pytest.approx(2.5))
    assert costs[arrays.slot_used].mean() == pytest.approx(1.0)
    # Budget in cost units: the judgments are charged the normalised predicted cost.
    spent = campaign_progress(campaign).spent
    assert spent == pytest.approx(
        sum(Judgment.objects.filter(campaign=campaign).values_list("cost", flat=True))
    )


def test_it_refreshes_idempotently(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    _judge(campaign, assessor, _grade, limit=5)
    recompute(campaign.pk)
    state = SamplingState.objects.get(campaign=campaign)
    counts = (Draw.objects.count(), Task.objects.count(), EstimateSnapshot.objects.count())
    recompute(campaign.pk)
    recompute(campaign.pk)
    again = SamplingState.objects.get(campaign=campaign)
    assert (again.version, again.fingerprint) == (state.version, state.fingerprint)
    assert (Draw.objects.count(), Task.objects.count(), EstimateSnapshot.objects.count()) == counts
    _judge(campaign, assessor, _grade, limit=1)
    recompute(campaign.pk)
    assert SamplingState.objects.get(campaign=campaign).version == state.version + 1
    assert EstimateSnapshot.objects.count() == counts[2] + 1


def test_it_estimates_every_system_and_the_difference_from_complete_topics(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, api: Api
) -> None:
    campaign = campaign_create(
        creator=coordinator,
        name="diff",
        metric="DCG@5",
        grades=["0", "1", "2"],
        goal="difference",
        strategy="active",
        budget=21,
        seed=5,
    )
    runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("b.run", RUN_B)])
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    campaign = campaign_start(campaign=campaign)
    assert _judge(campaign, assessor, _grade) == 21  # every topic: the estimate is a weighted mean
    recompute(campaign.pk)
    response = api(coordinator).get(f"/api/campaigns/{campaign.pk}/estimates/")
    assert response.status_code == 200
    body = response.json()
    rows = {(row["name"], row["metric"]): row for row in body["systems"]}
    assert set(rows) == {(s, f"{m}@5") for s in ("alpha", "beta") for m in ("DCG", "ERR", "nDCG")}
    draws = list(Draw.objects.filter(campaign=campaign).values_list("topic__qid", "propensity"))
    metric = Metric("DCG", 5, y_max=2)
    # alpha ranks d?-1 .. d?-5 on every topic, which the oracle grades 2, 1, 1, 0, 0.
    values = [dcg([2, 1, 1, 0, 0], metric)] * len(draws)
    expected = query_level_estimate(
        np.array(values), np.array([p for _, p in draws]), np.full(len(draws), 1 / 3)
    )
    assert rows[("alpha", "DCG@5")]["value"] == pytest.approx(expected.value)
    assert rows[("alpha", "DCG@5")]["n"] == len(draws)
    difference = body["difference"]
    assert difference["systems"] == ["alpha", "beta"] and difference["metric"] == "DCG@5"
    assert difference["value"] == pytest.approx(
        rows[("alpha", "DCG@5")]["value"] - rows[("beta", "DCG@5")]["value"]
    )
    assert difference["reliable"] is False and difference["p_order_right"] is None, (
        "no interval to read it from"
    )
    # Three topics: below the reliability threshold no CLT-type interval is shown; low/high
    # carry the any-n bounds, cut to DCG@5's range [0, 3 * sum of discounts].
    top = metric.value_bounds()[1]
    for row in (*rows.values(), difference):
        assert row["reliable"] is False and row["reliable_from"] == 5 and row["interval"] == "any_n"
        assert (row["low"], row["high"]) == (row["any_n_low"], row["any_n_high"])
    assert 0.0 <= rows[("alpha", "DCG@5")]["low"] <= rows[("alpha", "DCG@5")]["high"] <= top
    assert -top <= difference["low"] <= difference["high"] <= top
    assert (body["spent"], body["budget"]) == (21.0, 21.0)
    assert api(assessor).get(f"/api/campaigns/{campaign.pk}/estimates/").status_code == 403


def test_it_reports_item_level_intervals_and_no_err_at_item_level(
    draft_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser, api: Api
) -> None:
    campaign_update(campaign=draft_campaign, strategy="items", budget=12)
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    _judge(campaign, assessor, _grade)
    recompute(campaign.pk)
    body = api(coordinator).get(f"/api/campaigns/{campaign.pk}/estimates/").json()
    assert body["level"] == "item"
    dcg_row = next(r for r in body["systems"] if r["name"] == "alpha" and r["metric"] == "DCG@5")
    clt, hoeffding, bernstein = (dcg_row["intervals"][k] for k in ("clt", "hoeffding", "bernstein"))
    assert clt == pytest.approx([dcg_row["low"], dcg_row["high"]])
    # Hoeffding's guarantee costs width: it contains the CLT interval here.
    assert hoeffding[0] <= clt[0] and hoeffding[1] >= clt[1] and bernstein is not None
    # Every interval is cut to where DCG@5 on grades 0-2 can lie: [0, 3 * (1 + 1/log2 3 + ...)].
    dcg_max = 3.0 * sum(1.0 / np.log2(rank + 1.0) for rank in range(1, 6))
    for low, high in (clt, hoeffding, bernstein):
        assert 0.0 <= low <= dcg_row["value"] <= high <= dcg_max + 1e-9
    assert hoeffding[1] == pytest.approx(dcg_max), "12 draws: Hoeffding reaches past the maximum"
    err_row = next(r for r in body["systems"] if r["name"] == "alpha" and r["metric"] == "ERR@5")
    assert err_row["value"] is None and "not linear" in err_row["reason"]


def test_it_warns_when_a_new_run_reaches_beyond_the_judged_documents(
    campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser, api: Api
) -> None:
    campaign_update(campaign=campaign, budget=21)
    assert _judge(campaign, assessor, _grade) == 21
    recompute(campaign.pk)
    copy_of_alpha = RUN_A.replace("alpha", "gamma")
    novel = "".join(f"{q} Q0 new{q}-{d} {d} {9 - d}.0 delta\n" for q in (1, 2, 3) for d in range(1, 4))
    novel += "".join(f"{q} Q0 d{q}-1 4 1.0 delta\n" for q in (1, 2, 3))
    unjudged = "".join(f"{q} Q0 new{q}-{d} {d} {9 - d}.0 epsilon\n" for q in (1, 2, 3) for d in range(1, 4))
    client = api(coordinator)
    files = [upload("gamma.run", copy_of_alpha), upload("delta.run", novel), upload("epsilon.run", unjudged)]
    response = client.post(
        f"/api/campaigns/{campaign.pk}/evaluate/", {"file": [f for _, f in files]}, format="multipart"
    )
    assert response.status_code == 201, response.content
    by_name = {row["system"]: row for row in response.json()}
    alpha = next(
        r for r in estimates_current(campaign)["systems"] if r["name"] == "alpha" and r["metric"] == "DCG@5"
    )
    assert by_name["gamma"]["value"] == pytest.approx(alpha["value"])
    assert by_name["gamma"]["unreachable_share"] == 0 and by_name["gamma"]["warning"] is None
    # delta's top three are documents nobody judged: their share of its weight is unreachable.
    discounts = 1 / np.log2(np.arange(2, 7))
    assert by_name["delta"]["unreachable_share"] == pytest.approx(discounts[:3].sum() / discounts[:4].sum())
    assert "could not reach" in by_name["delta"]["warning"]
    # A run of nothing but unjudged documents gets no number, not "0 [0, 0]".
    epsilon = by_name["epsilon"]
    assert epsilon["unreachable_share"] == 1 and "nothing to estimate" in epsilon["warning"]
    assert [epsilon[key] for key in ("value", "se", "low", "high")] == [None] * 4
    # Evaluation-only runs are not pooled.
    assert pool_arrays_for(Campaign.objects.get(pk=campaign.pk)).system_names == ("alpha", "beta")
    assert len(client.get(f"/api/campaigns/{campaign.pk}/evaluate/").json()) == 3
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "<b>5</b><span>runs (3 evaluated only, not pooled)</span>" in page


def test_it_serves_sampling_history_and_throughput(
    campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser, api: Api
) -> None:
    _judge(campaign, assessor, _grade, limit=7)
    recompute(campaign.pk)
    _judge(campaign, assessor, _grade, limit=7)
    recompute(campaign.pk)
    client = api(coordinator)
    sampling = client.get(f"/api/campaigns/{campaign.pk}/sampling/").json()
    assert [row["topic"] for row in sampling] == ["1", "2", "3"]
    assert sum(row["q"] for row in sampling) == pytest.approx(1.0)
    assert np.mean([row["cost"] for row in sampling]) == pytest.approx(1.0)
    history = client.get(f"/api/campaigns/{campaign.pk}/estimates/history/").json()
    assert [snapshot["judgments"] for snapshot in history] == [7, 14]
    # ?after=<id> gives only the newer snapshots (what the dashboard fetches on each change).
    newer = client.get(f"/api/campaigns/{campaign.pk}/estimates/history/?after={history[0]['id']}").json()
    assert [snapshot["id"] for snapshot in newer] == [history[1]["id"]]
    after_last = f"/api/campaigns/{campaign.pk}/estimates/history/?after={history[1]['id']}"
    assert client.get(after_last).json() == []
    refused = client.get(f"/api/campaigns/{campaign.pk}/estimates/history/?after=yesterday")
    assert refused.status_code == 400 and "after" in refused.json()["detail"]
    throughput = client.get(f"/api/campaigns/{campaign.pk}/throughput/").json()
    assert throughput["judgments"] == 14 and throughput["median_seconds"] == 3.0
    assert throughput["assessors"][0]["assessor"] == "alice" and throughput["per_hour"] == pytest.approx(1200)
    progress = client.get(f"/api/campaigns/{campaign.pk}/progress/").json()
    assert progress["state"] == "running" and progress["strategy"] == "passive"


def test_it_exports_everything_to_recompute_the_estimates_offline(
    campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser, api: Api
) -> None:
    campaign_update(campaign=campaign, budget=14)
    _judge(campaign, assessor, _grade)
    recompute(campaign.pk)
    response = api(coordinator).get(f"/api/campaigns/{campaign.pk}/export/offline.zip")
    assert response.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    names = set(archive.namelist())
    assert {
        "draws.csv",
        "judgments.csv",
        "qrels.txt",
        "runs/alpha.run",
        "runs/beta.run",
        "sampling.csv",
        "label_model.json",
        "estimates.json",
        "estimates.csv",
        "config.json",
    } <= names
    # Recompute alpha's DCG@5 from the files alone, with the estimation package.
    qrels = {}
    for line in archive.read("qrels.txt").decode().splitlines():
        qid, _, docno, grade = line.split()
        qrels[(qid, docno)] = int(grade)
    ranking: dict[str, list[str]] = {}
    for line in archive.read("runs/alpha.run").decode().splitlines():
        qid, _, docno, *_ = line.split()
        ranking.setdefault(qid, []).append(docno)
    metric = Metric("DCG", 5, y_max=2)
    draws = list(csv.DictReader(io.StringIO(archive.read("draws.csv").decode())))
    values = [dcg([qrels[(d["topic"], docno)] for docno in ranking[d["topic"]]], metric) for d in draws]
    offline = query_level_estimate(
        np.array(values), np.array([float(d["propensity"]) for d in draws]), np.full(len(draws), 1 / 3)
    )
    history = json.loads(archive.read("estimates.json"))
    online = next(r for r in history[-1]["systems"] if r["name"] == "alpha" and r["metric"] == "DCG@5")
    assert (online["value"], online["se"]) == (
        pytest.approx(offline.value),
        pytest.approx(offline.standard_error),
    )
    rows = list(csv.DictReader(io.StringIO("".join(exports.estimates_history_csv(campaign)))))
    assert len(rows) == len(history) * 6
    model = json.loads(archive.read("label_model.json"))
    assert model["label_model"]["n_labels"] == 14 and model["cost_model"]["kind"] == "constant"
