"""Once every pool item is judged the estimand is known: each estimate row carries its exact value,
equal to what evaluate gives from the campaign's own judgments, beside the sample's estimate."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser

from estimation.formats.trec import read_run
from estimation.metrics.spec import Metric
from estimation.metrics.values import evaluate_run
from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign, Judgment
from labeling.recompute import recompute
from labeling.services.campaigns import campaign_assessors_assign, campaign_start, campaign_update
from sampling import estimates as estimates_module
from sampling import estimates_current
from sampling.models import EstimateSnapshot
from tests.conftest import RUN_A, RUN_B
from tests.sampling.helpers import oracle_grade


@pytest.mark.parametrize("strategy", ["active", "items"])
def test_a_fully_judged_pool_gives_exact_values_as_evaluate_does(
    draft_campaign: Campaign,
    assessor: AbstractBaseUser,
    tmp_path,
    strategy: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    campaign_update(campaign=draft_campaign, budget=500, strategy=strategy, goal="difference")
    campaign_assessors_assign(campaign=draft_campaign, usernames=[assessor.get_username()])
    campaign = campaign_start(campaign=draft_campaign)
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=oracle_grade(task.document.docno), seconds=2.0)
    computed = estimates_current(Campaign.objects.get(pk=campaign.pk))
    assert computed["exact"].startswith("Every pool item is judged")
    # The pages read the worker's stored snapshot once it is current: it says the same.
    recompute(campaign.pk)
    estimates = estimates_current(Campaign.objects.get(pk=campaign.pk))
    assert "computed_at" in estimates, "read from the stored snapshot"
    assert estimates["exact"] == computed["exact"]
    assert [row["exact"] for row in estimates["systems"]] == [row["exact"] for row in computed["systems"]]
    # A snapshot stored in another format (an earlier version's, without `exact`) is not current:
    # computed again rather than read, and stored anew by the next recompute.
    monkeypatch.setattr(estimates_module, "SNAPSHOT_FORMAT", estimates_module.SNAPSHOT_FORMAT + 1)
    again = estimates_current(Campaign.objects.get(pk=campaign.pk))
    assert "computed_at" not in again and again["exact"] == computed["exact"]
    stored = EstimateSnapshot.objects.filter(campaign=campaign).count()
    recompute(campaign.pk)
    assert EstimateSnapshot.objects.filter(campaign=campaign).count() == stored + 1
    qrels: dict[str, dict[str, int]] = {}
    for qid, docno, grade in Judgment.objects.filter(campaign=campaign).values_list(
        "topic__qid", "document__docno", "grade"
    ):
        qrels.setdefault(qid, {})[docno] = grade
    runs = {}
    for name, text in (("alpha", RUN_A), ("beta", RUN_B)):
        path = tmp_path / f"{name}.run"
        path.write_text(text)
        runs[name] = read_run(path)
    exact = {}
    for row in estimates["systems"]:
        metric = Metric.parse(row["metric"], y_max=2)
        per_topic = evaluate_run(qrels, runs[row["name"]], metric)
        exact[row["name"], row["metric"]] = float(np.mean([per_topic.get(qid, 0.0) for qid in qrels]))
        assert row["exact"] == pytest.approx(exact[row["name"], row["metric"]]), row
        if row["metric"] == "DCG@5":  # the sample's own estimate stays beside the exact value
            assert row["value"] is not None and row["n"] > 0
    assert {metric for _, metric in exact} == {"DCG@5", "ERR@5", "nDCG@5"}
    difference = estimates["difference"]
    gap = exact["alpha", "DCG@5"] - exact["beta", "DCG@5"]
    assert difference["systems"] == ["alpha", "beta"] and difference["exact"] == pytest.approx(gap)
