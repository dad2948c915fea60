"""End to end in headless chromium: an assessor grades the documents a comparison needs and
answers three side-by-side comparisons with the keyboard; the answers are stored as shown."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign, Judgment
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from sxs.models import SxsAnswer, SxsTask
from tests.e2e.helpers import log_in
from uploads.imports import documents_import, qrels_import, topics_import
from uploads.run_imports import runs_import

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TOPICS = [
    {
        "id": qid,
        "title": f"{subject} recycling",
        "description": f"How is {subject} recycled?",
        "narrative": "Processes.",
    }
    for qid, subject in (("601", "glass"), ("602", "paper"))
]
SYSTEMS = ("north", "south", "west")


@pytest.fixture
def sxs_campaign(people: dict[str, AbstractBaseUser]) -> Campaign:
    """Two topics, three runs of ten documents, K = 10; documents 1-8 have qrels, 9-12 do not."""
    campaign = campaign_create(
        creator=people["coordinator"],
        name="Lists",
        metric="DCG@10",
        budget=50,
        judging_mode="sxs",
        mode_settings={"k": 10},
        seed=11,
    )
    topics = "".join(json.dumps(topic) + "\n" for topic in TOPICS)
    topics_import(campaign=campaign, files=[("topics.jsonl", io.BytesIO(topics.encode()))])
    documents = "".join(
        json.dumps(
            {
                "docno": f"{topic['id']}-{n}",
                "title": f"{topic['title']} guide part {n}",
                "url": f"https://example.org/{topic['id']}/a-rather-long-path/for-document-{n}",
                "text": f"Part {n}: {topic['description']} " * 12,
            }
        )
        + "\n"
        for topic in TOPICS
        for n in range(1, 13)
    )
    documents_import(campaign=campaign, files=[("docs.jsonl", io.BytesIO(documents.encode()))])
    orders = {"north": range(1, 11), "south": range(10, 0, -1), "west": [*range(3, 11), 11, 12]}
    runs = [
        (
            f"{name}.run",
            io.BytesIO(
                "".join(
                    f"{topic['id']} Q0 {topic['id']}-{n} {rank} {50 - rank}.0 {name}\n"
                    for topic in TOPICS
                    for rank, n in enumerate(orders[name], start=1)
                ).encode()
            ),
        )
        for name in SYSTEMS
    ]
    runs_import(campaign=campaign, files=runs)
    qrels = "".join(f"{topic['id']} 0 {topic['id']}-{n} {n % 4}\n" for topic in TOPICS for n in range(1, 11))
    qrels_import(campaign=campaign, files=[("q.txt", io.BytesIO(qrels.encode()))])
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    return campaign_start(campaign=campaign)


def wait_for_item_other_than(page: Any, task: str) -> None:
    """Wait for an item other than `task` ("kind:id": grade and SxS tasks number apart)."""
    page.wait_for_function(
        """previous => {
            const item = document.getElementById('item');
            const empty = !document.getElementById('empty').hidden;
            const ready = !item.hidden && Array.from(document.querySelectorAll('#answers button[data-kind]'))
                .some((b) => !b.disabled && b.offsetParent !== null);
            return empty || (ready && item.dataset.kind + ':' + item.dataset.task !== previous);
        }""",
        arg=task,
    )


def on_screen(page: Any) -> dict[str, Any]:
    return page.evaluate(
        """() => ({
            task: document.getElementById('item').dataset.task,
            kind: document.getElementById('item').dataset.kind,
            left: Array.from(document.querySelectorAll('#left-results li')).map((li) => li.dataset.docno),
            right: Array.from(document.querySelectorAll('#right-results li')).map((li) => li.dataset.docno),
        })"""
    )


def test_it_answers_three_comparisons_with_the_keyboard(
    browser_page: Any,
    live_server: Any,
    sxs_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
) -> None:
    page = browser_page
    page.set_viewport_size({"width": 1400, "height": 900})
    log_in(page, live_server.url, "alice", f"/judge/{sxs_campaign.pk}/")
    wait_for_item_other_than(page, "")
    # Keys as the help overlay documents them: Shift+← left much better, → right better, 3 same.
    keys = ["Shift+ArrowLeft", "ArrowRight", "3"]
    expected_shown = [-2, 1, 0]
    seen: list[dict[str, Any]] = []
    grades = 0
    while len(seen) < 3:
        item = on_screen(page)
        if item["kind"] == "grade":
            page.keyboard.press("2")
            grades += 1
            wait_for_item_other_than(page, item["kind"] + ":" + item["task"])
            continue
        assert len(item["left"]) == 10 and len(item["right"]) == 10
        if not seen:
            answers = page.locator("#sxs-answers").bounding_box()
            assert answers["y"] + answers["height"] <= 900, "the answers show without scrolling"
            page.screenshot(path=str(screenshot_dir / "sxs.png"))
            page.keyboard.press("c")
            page.keyboard.type("left is cleaner")
            page.keyboard.press("Enter")  # leaves the box, as the graded note does
        page.keyboard.press(keys[len(seen)])
        seen.append(item)
        wait_for_item_other_than(page, item["kind"] + ":" + item["task"])

    # Only west lists hold ungraded documents (11 and 12 of a topic): graded once per topic, if shown.
    assert grades == Judgment.objects.filter(source="assessor").count() and grades in (0, 2, 4)
    for item, shown in zip(seen, expected_shown, strict=True):
        answer = SxsAnswer.objects.select_related("task").get(task_id=int(item["task"]))
        task: SxsTask = answer.task
        left_ids = task.documents_a if task.a_on_left else task.documents_b
        docnos = dict(sxs_campaign.documents.values_list("pk", "docno"))
        assert [docnos[pk] for pk in left_ids] == item["left"], "the stored sides are the ones displayed"
        assert answer.shown == shown and answer.preference == (shown if task.a_on_left else -shown)
        assert answer.seconds and answer.seconds > 0
    assert SxsAnswer.objects.get(task_id=int(seen[0]["task"])).comment == "left is cleaner"

    # A phone: the lists stack and nothing overflows sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(200)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(screenshot_dir / "sxs-phone.png"), full_page=True)


def test_lists_without_uploaded_documents_name_each_result_once(
    browser_page: Any, live_server: Any, people: dict[str, AbstractBaseUser]
) -> None:
    campaign = campaign_create(
        creator=people["coordinator"],
        name="Bare lists",
        metric="DCG@3",
        budget=10,
        judging_mode="sxs",
        mode_settings={"k": 3, "unjudged": "zero"},
        seed=5,
    )
    runs = [
        (
            f"{name}.run",
            io.BytesIO(
                "".join(f"601 Q0 D{n} {r} {9 - r}.0 {name}\n" for r, n in enumerate(order, 1)).encode()
            ),
        )
        for name, order in (("north", (1, 2, 3)), ("south", (3, 4, 5)))
    ]
    runs_import(campaign=campaign, files=runs)
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    campaign_start(campaign=campaign)
    page = browser_page
    log_in(page, live_server.url, "alice", f"/judge/{campaign.pk}/")
    page.wait_for_function("document.getElementById('item').dataset.kind === 'sxs'")
    rows = page.locator("#left-results li").all_inner_texts()
    assert len(rows) == 3
    for text in rows:
        docno = next(word for word in text.split() if word.startswith("D"))
        assert text.count(docno) == 1, text
    assert page.locator("h2#topic-title").inner_text() == "601"
