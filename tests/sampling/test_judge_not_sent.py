"""An endpoint judge over documents without text: nothing is sent, the page says why and what to
do, the pairs are not cached as the model's refusals, and once the texts are uploaded "Run
again" asks exactly them. Refusal reasons and every call are visible to the coordinator (the
run's reasons, the judge-calls export), and a repeated run shows its version's totals."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

from django.contrib.auth.models import AbstractBaseUser
from django.test import override_settings
from rest_framework.test import APIClient

from labeling.models import Campaign
from sampling import judge_create, judge_run_progress
from sampling.models import Judge, JudgeCall, JudgeRun
from tests.chat_server import ChatServerState, chat_server
from tests.sampling.helpers import TEMPLATE, run_to_end, texts_import


def _judge(campaign: Campaign, url: str) -> Judge:
    return judge_create(
        campaign=campaign, name="llm", kind="endpoint", model="fake-judge", base_url=url, prompt=TEMPLATE,
        concurrency=2,
    )  # fmt: skip


@override_settings(JUDGE_REQUEST_TIMEOUT_SECONDS=2, JUDGE_RETRY_BACKOFF_SECONDS=0.01)
def test_pairs_without_text_are_not_sent_not_cached_and_asked_once_the_texts_arrive(
    draft_campaign: Campaign, coordinator: AbstractBaseUser, api: Callable[[AbstractBaseUser], APIClient]
) -> None:
    with chat_server(ChatServerState(n_grades=3)) as (url, state):
        judge = _judge(draft_campaign, url)
        run = run_to_end(judge)
        # Runs only, no texts: every one of the 21 pairs is "not sent", none asked.
        assert (run.status, run.labels, run.refusals, run.skipped, len(state.requests)) == (
            JudgeRun.Status.DONE, 0, 0, 21, 0,
        )  # fmt: skip
        shown = api(coordinator).get(f"/api/campaigns/{draft_campaign.pk}/judges/{judge.pk}/").json()["run"]
        assert shown["skipped"] == 21 and shown["reasons"][0]["reason"] == "the document has no text"
        assert "21 pairs were not sent" in shown["warning"] and "then Run again" in shown["warning"]
        assert not JudgeCall.objects.filter(outcome__in=["label", "refusal"]).exists()
        page = api(coordinator).get(f"/campaigns/{draft_campaign.pk}/")
        assert "21 pairs were not sent: the document has no text (21)" in page.content.decode()

        texts_import(draft_campaign)
        again = run_to_end(judge)
        assert (again.labels, again.skipped) == (21, 0) and len(state.requests) == 21
        assert judge_run_progress(again)["warning"] == ""  # type: ignore[index]


@override_settings(JUDGE_REQUEST_TIMEOUT_SECONDS=2, JUDGE_RETRY_BACKOFF_SECONDS=0.01)
def test_refusal_reasons_and_every_call_reach_the_coordinator(
    draft_campaign: Campaign, coordinator: AbstractBaseUser, api: Callable[[AbstractBaseUser], APIClient]
) -> None:
    texts_import(draft_campaign)
    state = ChatServerState(n_grades=3)
    state.scripts = {("1", f"d1-{d}"): ["text:I cannot tell"] for d in range(1, 8)}
    with chat_server(state) as (url, _):
        judge = _judge(draft_campaign, url)
        run = run_to_end(judge)
    progress = judge_run_progress(run)
    assert progress is not None and (progress["labels"], progress["refusals"]) == (14, 7)
    assert progress["reasons"] == [{"outcome": "refusal", "reason": "no grade in the answer", "count": 7}]
    assert progress["version_totals"] == {"labels": 14, "refusals": 7, "errors": 0, "skipped": 0}
    response = api(coordinator).get(f"/api/campaigns/{draft_campaign.pk}/export/judge-calls.csv")
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))  # type: ignore[attr-defined]
    refused = [row for row in rows if row["outcome"] == "refusal"]
    assert len(rows) == 21 and len(refused) == 7
    assert all(row["text"].startswith("no grade in the answer; the answer: I cannot tell") for row in refused)
