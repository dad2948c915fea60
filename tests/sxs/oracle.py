"""A side-by-side campaign to learn DCG from, and a deterministic assessor (an oracle scoring
the lists with a known, non-standard utility) who answers it through the services."""

from __future__ import annotations

import io
import json

import numpy as np
from django.contrib.auth.models import AbstractBaseUser

from estimation.learned_dcg.fit import utilities
from labeling.models import Campaign, Document
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from sxs import services as sxs_services
from sxs.models import SxsTask
from tests.sxs.conftest import docno
from uploads.imports import documents_import, qrels_import, topics_import
from uploads.run_imports import runs_import

# A campaign to learn from: 4 topics, 5 systems (10 pairs: 40 comparisons), K = 3, grades 0-2,
# every listed document graded by qrels (so no grade task comes between the comparisons).
LEARN_TOPICS = ("401", "402", "403", "404")
LEARN_SYSTEMS = ("ant", "bee", "cat", "dog", "eel")
LEARN_DOCUMENTS = 8


def learn_grade(topic: str, number: int) -> int:
    """The qrels grade of document `number` of `topic` (a fixed pattern that varies by topic)."""
    return (number * 7 + int(topic)) % 3


def _learn_run(tag: str, index: int) -> tuple[str, io.BytesIO]:
    rng = np.random.default_rng(100 + index)
    lines = []
    for topic in LEARN_TOPICS:
        order = rng.permutation(np.arange(1, LEARN_DOCUMENTS + 1))
        lines += [
            f"{topic} Q0 {docno(topic, int(n))} {rank} {100 - rank}.0 {tag}\n"
            for rank, n in enumerate(order, start=1)
        ]
    return f"{tag}.run", io.BytesIO("".join(lines).encode())


def make_learning_campaign(
    creator: AbstractBaseUser,
    usernames: list[str],
    *,
    name: str = "learn",
    seed: int = 77,
    **settings: object,
) -> Campaign:
    """The campaign above, running, with `usernames` assigned as assessors (`settings`: SxS
    settings beyond K = 3 and the "zero" policy)."""
    made = campaign_create(
        creator=creator,
        name=name,
        metric="DCG@3",
        grades=["Bad", "Fair", "Good"],
        budget=1000,
        judging_mode="sxs",
        mode_settings={"k": 3, "unjudged": "zero", **settings},
        seed=seed,
    )
    topics = "".join(
        json.dumps({"qid": qid, "title": f"query {qid}", "description": "d", "narrative": "n"}) + "\n"
        for qid in LEARN_TOPICS
    )
    topics_import(campaign=made, files=[("topics.jsonl", io.BytesIO(topics.encode()))])
    documents = "".join(
        json.dumps({"docno": docno(qid, n), "title": f"Doc {qid}/{n}", "text": f"text {n}"}) + "\n"
        for qid in LEARN_TOPICS
        for n in range(1, LEARN_DOCUMENTS + 1)
    )
    documents_import(campaign=made, files=[("docs.jsonl", io.BytesIO(documents.encode()))])
    runs_import(campaign=made, files=[_learn_run(tag, index) for index, tag in enumerate(LEARN_SYSTEMS)])
    qrels = "".join(
        f"{qid} 0 {docno(qid, n)} {learn_grade(qid, n)}\n"
        for qid in LEARN_TOPICS
        for n in range(1, LEARN_DOCUMENTS + 1)
    )
    qrels_import(campaign=made, files=[("q.txt", io.BytesIO(qrels.encode()))])
    campaign_assessors_assign(campaign=made, usernames=usernames)
    return campaign_start(campaign=made)


# The oracle's truth: gains [0, 1, 1.5] (grade 1 worth more than DCG's 2^y - 1 says), discount 1/k.
TRUTH = np.outer(1.0 / np.arange(1, 4), [0.0, 1.0, 1.5])


def oracle_answer(task: SxsTask) -> int:
    """The answer as displayed (-2 left much better .. 2 right much better) of an assessor who
    scores each list by TRUTH: "much better" from a difference of 1."""
    qid = task.topic.qid

    def grades(documents: list[int]) -> np.ndarray:
        numbers = {
            pk: int(d.rsplit("-", 1)[1])
            for pk, d in Document.objects.filter(pk__in=documents).values_list("pk", "docno")
        }
        return np.array([[learn_grade(qid, numbers[pk]) for pk in documents]])

    left, right = (
        (task.documents_a, task.documents_b) if task.a_on_left else (task.documents_b, task.documents_a)
    )
    delta = float(utilities(TRUTH, grades(left))[0] - utilities(TRUTH, grades(right))[0])
    if abs(delta) < 1e-9:
        return 0
    size = 2 if abs(delta) >= 1.0 else 1
    return -size if delta > 0 else size


def answer_by_oracle(campaign: Campaign, user: AbstractBaseUser, count: int | None = None) -> int:
    """Answer up to `count` comparisons (all that are left when None) through the services."""
    answered = 0
    while count is None or answered < count:
        item = sxs_services.sxs_next(campaign=campaign, assessor=user)
        if item is None:
            break
        assert item.kind == "sxs", "every listed document has a grade: no grade task comes first"
        sxs_services.sxs_answer(task=item.sxs, assessor=user, preference=oracle_answer(item.sxs), seconds=3.0)
        answered += 1
    return answered
