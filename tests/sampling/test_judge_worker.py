"""Judge runs in a real Celery worker against a real local chat-completions server: the worker
is killed with SIGKILL mid-run and started again; the run resumes by itself, no pair whose
answer was stored is asked again, none is lost, and only the request in flight at the kill is
repeated. Over a real Redis (production) and the embedded default (filesystem broker, SQLite).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from labeling.models import Campaign
from sampling import judge_create, judge_run_start
from sampling.models import JudgeCall, JudgeLabel, JudgeRun
from tests.chat_server import ChatServerState, chat_server, grade_of
from tests.sampling.helpers import SECRET, TEMPLATE, texts_import
from tests.workers import CeleryWorker, broker_chosen

pytestmark = [pytest.mark.servers, pytest.mark.django_db(transaction=True)]


def _wait_for(check: Callable[[], bool], seconds: float, worker: CeleryWorker) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out; worker log:\n{worker.log.read_text(errors='replace')[-4000:]}")


def _asked_once_settled(
    state: ChatServerState, quiet: float = 0.5, limit: float = 10.0
) -> Counter[tuple[str, str]]:
    """The pairs the chat server was asked, once it has read every request sent so far: a request
    the worker sent just before it was killed is read by the server's thread a moment later."""
    deadline = time.monotonic() + limit
    asked = state.asked()
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = state.asked()
        if now == asked:
            break
        asked = now
    return asked


@pytest.mark.parametrize("broker", ["redis", "embedded"])
def test_a_killed_worker_loses_no_answer_and_asks_no_stored_pair_again(
    broker: str,
    draft_campaign: Campaign,
    tmp_path: Path,
    settings: object,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    redis_url = broker_chosen(broker, request)
    monkeypatch.setenv("JUDGE_API_KEY", SECRET)
    monkeypatch.setenv("JUDGE_RUN_CHUNK_SECONDS", "1")
    monkeypatch.setenv("JUDGE_REQUEST_TIMEOUT_SECONDS", "2")
    texts_import(draft_campaign)
    # One request at a time, 0.2 s each: 21 pairs take about 4 s, time to kill the worker.
    with chat_server(ChatServerState(n_grades=3, delay_seconds=0.2)) as (url, state):
        judge = judge_create(
            campaign=draft_campaign,
            name="llm",
            kind="endpoint",
            model="fake-judge",
            base_url=url,
            api_key_variable="JUDGE_API_KEY",
            prompt=TEMPLATE,
            price_in_per_1k=1.0,
            cost_cap=1000.0,
            concurrency=1,
        )
        # Queued before any worker runs (this process's broker is in memory): the worker's
        # start-up resumption picks it up, as it would after a crash.
        run = judge_run_start(judge)
        worker = CeleryWorker(redis_url, tmp_path)
        worker.start()
        try:
            _wait_for(lambda: JudgeRun.objects.get(pk=run.pk).labels >= 4, 90, worker)
            worker.kill()
            stored_before = set(JudgeCall.objects.filter(judge=judge).values_list("qid", "docno"))
            asked_before = _asked_once_settled(state)
            assert 4 <= len(stored_before) < 21
            worker.start()
            _wait_for(lambda: JudgeRun.objects.get(pk=run.pk).status == JudgeRun.Status.DONE, 120, worker)
        finally:
            worker.stop()
        asked = state.asked()
    run.refresh_from_db()
    labels = dict(
        JudgeLabel.objects.filter(judge=judge).values_list("qid", "docno").values_list("docno", "grade")
    )
    assert run.labels == 21 and JudgeLabel.objects.filter(judge=judge).count() == 21  # none lost
    assert all(labels[docno] == grade_of(qid, docno, 3) for qid, docno in asked)
    assert all(asked[pair] == 1 for pair in stored_before)  # the cache held across the crash
    repeated = {pair for pair, count in asked.items() if count > 1}
    # Only what was in flight at the kill (one request at a time) can be asked again.
    assert len(repeated) <= 1 and repeated <= set(asked_before) - stored_before
    log = worker.log.read_text(errors="replace")
    assert "judge_run_step" in log and SECRET not in log
