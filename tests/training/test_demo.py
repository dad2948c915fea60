"""The training-data demo: features read off the generated collection that predict its grades,
two topics labeled, held-out test queries, and a first round that asks only about the others."""

from __future__ import annotations

import io

import numpy as np
import pytest
from scipy.stats import spearmanr

from demo.loading import demo_load
from estimation.formats.letor import LetorPool, iter_letor, letor_from_rows
from labeling.models import Campaign
from training import services
from training.demo import DEMO_TRAINING_CAMPAIGN, LABELED_TOPICS, TEST_SEED, letor_lines
from training.models import TrainingPool, TrainingSelection


def _read(text: str) -> LetorPool:
    return letor_from_rows([("demo.svmlight", iter_letor(io.StringIO(text)))])


def test_the_demo_features_follow_the_hidden_grades() -> None:
    pool = _read(letor_lines())
    assert pool.labeled.all() and pool.n_queries == 6 and pool.n_docs == 180
    text_matches, run_score = pool.features[:, 1], pool.features[:, 3]  # bm25-tuned, the best run
    assert spearmanr(text_matches, pool.grades).statistic > 0.3
    assert spearmanr(run_score, pool.grades).statistic > 0.3
    test = _read(letor_lines(TEST_SEED, qid_prefix="test-"))
    assert not set(test.query_ids) & set(pool.query_ids)
    assert not np.array_equal(test.grades, pool.grades), "a second collection, not a copy"


@pytest.mark.django_db
def test_the_demo_campaign_selects_its_first_round_from_the_unlabeled_topics() -> None:
    demo_load()
    demo_load()  # idempotent
    campaign = Campaign.objects.get(name=DEMO_TRAINING_CAMPAIGN)
    assert (campaign.judging_mode, campaign.status) == ("training", Campaign.Status.RUNNING)
    record = TrainingPool.objects.get(campaign=campaign)
    assert (record.queries, record.rows, record.base_labeled) == (6, 180, 30 * len(LABELED_TOPICS))
    assert record.test is not None
    assert not campaign.topics.filter(is_stub=True).exists(), "assessors read the topics' text"

    first = services.rounds_advance(campaign=campaign)

    assert first is not None and first.selected == 10 and first.test_dcg is not None
    chosen = list(TrainingSelection.objects.filter(round=first).values_list("qid", "docid"))
    assert not {qid for qid, _ in chosen} & set(LABELED_TOPICS)
    assert max(sum(1 for qid, _ in chosen if qid == query) for query, _ in chosen) <= 5
    assert services.rounds_advance(campaign=campaign) is None, "the round is not judged yet"
