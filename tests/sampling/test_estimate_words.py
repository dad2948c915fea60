"""Why ERR and nDCG are missing names the campaign's design: a judged campaign's dashboard said
"item-level sampling" for "Model labels + human sample"."""

from __future__ import annotations

import pytest

from labeling.models import Campaign
from labeling.services.campaigns import campaign_update
from sampling import estimates_compute, judge_create, judge_labels_import
from tests.conftest import upload


@pytest.mark.parametrize(
    ("strategy", "design"),
    [("items", "item-level sampling (single documents)"), ("judged", "model labels + human sample")],
)
def test_the_reason_names_the_design(draft_campaign: Campaign, strategy: str, design: str) -> None:
    campaign_update(campaign=draft_campaign, strategy=strategy)
    if strategy == "judged":
        judge = judge_create(campaign=draft_campaign, name="lenient", model="m")
        labels = "".join(f"{q} 0 d{q}-{d} 1\n" for q in (1, 2, 3) for d in range(1, 8))
        judge_labels_import(judge=judge, files=[upload("judge.txt", labels)])
    rows = estimates_compute(Campaign.objects.get(pk=draft_campaign.pk))["systems"]
    reasons = {row["reason"] for row in rows if row["metric"].startswith(("ERR", "nDCG"))}
    assert reasons == {
        f"{design} estimates DCG only: {metric}@5 is not linear in the item labels"
        for metric in ("ERR", "nDCG")
    }
