"""The training-data demo: the demo collection as a learning-to-rank feature pool.

Every (topic, document) of the generated collection becomes a LETOR row whose features are read
off the data as a team's feature extractor would: how often the topic's terms occur in the title
and the text, the length, the three demo runs' scores. Two topics come labeled (the labels a team
already has); the other four are for the assessors. The held-out test queries are a second
collection from the same generator (new documents, new grades), so the dashboard's learning curve
has a yardstick.
"""

from __future__ import annotations

import io

from django.db import transaction

from demo.loading import (
    DEMO_GRADES,
    RUN_NOISE,
    TOPICS,
    demo_assign_and_start,
    demo_campaign_draft,
    demo_collection,
    demo_texts_import,
)
from labeling.models import Campaign
from training import services as training_services

DEMO_TRAINING_CAMPAIGN = "Demo: sustainable cities, training data for a ranker (ELO-DCG)"
# Topics whose labels the team already has (the rest are the assessors' work).
LABELED_TOPICS = ("501", "502")
TEST_SEED = 4242
NOT_RANKED = -10.0  # the score feature of a document a run did not return


def _run_scores(runs: dict[str, str]) -> dict[str, dict[tuple[str, str], float]]:
    scores: dict[str, dict[tuple[str, str], float]] = {}
    for name, text in runs.items():
        for line in text.splitlines():
            qid, _, docno, _, score, _ = line.split()
            scores.setdefault(name, {})[(qid, docno)] = float(score)
    return scores


def letor_lines(seed: int = 2024, qid_prefix: str = "", labeled: tuple[str, ...] | None = None) -> str:
    """The demo collection of `seed` as LETOR rows (`grade qid:Q 1:v ... # docid = D`); grade -1
    for the topics outside `labeled` (None: every row keeps its grade, as test rows must)."""
    topics, documents, runs, grades = demo_collection(seed)
    terms = {topic.qid: topic.terms for topic in TOPICS}
    scores = _run_scores(runs)
    by_docno = {document["docno"]: document for document in documents}
    lines = []
    for (qid, docno), grade in grades.items():
        document = by_docno[docno]
        title, text = document["title"].lower(), document["text"].lower()
        features = [
            sum(title.count(term) for term in terms[qid]),
            sum(text.count(term) for term in terms[qid]),
            len(text.split()),
            *(scores[name].get((qid, docno), NOT_RANKED) for name in sorted(RUN_NOISE)),
        ]
        shown = grade if labeled is None or qid in labeled else -1
        values = " ".join(f"{index}:{value:g}" for index, value in enumerate(features, start=1))
        lines.append(f"{shown} qid:{qid_prefix}{qid} {values} # docid = {qid_prefix}{docno}\n")
    return "".join(lines)


@transaction.atomic
def demo_training_campaign() -> Campaign:
    """The training-data demo campaign, started (its first round is selected by the worker)."""
    campaign, created = demo_campaign_draft(
        DEMO_TRAINING_CAMPAIGN,
        judging_mode="training",
        # Rounds of 10 labels, at most 5 documents per query: four rounds on the budget of 40.
        mode_settings={"strategy": "elo_qd", "docs_per_query": 5, "round_size": 10, "ensemble": 8},
        grades=DEMO_GRADES,
        budget=40,
        budget_unit=Campaign.BudgetUnit.JUDGMENTS,
        seed=2027,
    )
    if not created:
        return campaign
    topics, documents, _, _ = demo_collection()
    demo_texts_import(campaign, topics, documents)
    pool = letor_lines(labeled=LABELED_TOPICS)
    training_services.pool_upload(campaign=campaign, files=[("pool.svmlight", io.BytesIO(pool.encode()))])
    test = letor_lines(TEST_SEED, qid_prefix="test-")
    training_services.test_upload(campaign=campaign, files=[("test.svmlight", io.BytesIO(test.encode()))])
    return demo_assign_and_start(campaign)
