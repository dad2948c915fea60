"""The batched uploads' "which of these pairs are stored?" statement: the stored rows of exactly
the asked pairs, and one index probe per pair however stale the database's statistics are (an
upload in progress outgrows them; PostgreSQL then read every stored row once per pair)."""

from __future__ import annotations

import pytest
from django.db import connection

from infrastructure.pair_lookup import PairLookup
from labeling.models import Campaign, Document, Judgment, Topic

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db]

QRELS = Judgment.Source.QRELS.value


def _stored_qrels(campaign: Campaign, topics: int, documents: int) -> tuple[list[int], list[int]]:
    """Qrels for every (topic, document) pair of the campaign but the diagonal, graded t + d mod 3."""
    topic_ids = [
        topic.pk
        for topic in Topic.objects.bulk_create(
            Topic(campaign=campaign, qid=f"q{index}") for index in range(topics)
        )
    ]
    document_ids = [
        document.pk
        for document in Document.objects.bulk_create(
            Document(campaign=campaign, docno=f"d{index}") for index in range(documents)
        )
    ]
    Judgment.objects.bulk_create(
        Judgment(
            campaign=campaign,
            topic_id=topic_id,
            document_id=document_id,
            grade=(t + d) % 3,
            cost=0.0,
            source=QRELS,
        )
        for t, topic_id in enumerate(topic_ids)
        for d, document_id in enumerate(document_ids)
        if t != d
    )
    return topic_ids, document_ids


def _lookup(campaign: Campaign) -> PairLookup:
    return PairLookup(
        table=Judgment._meta.db_table,
        columns=("topic_id", "document_id", "grade"),
        condition=f"campaign_id = %s AND source = '{QRELS}'",
        parameters=[campaign.pk],
        pair_columns=("topic_id", "document_id"),
    )


def test_it_returns_the_stored_rows_of_exactly_the_asked_pairs(draft_campaign: Campaign) -> None:
    topic_ids, document_ids = _stored_qrels(draft_campaign, 6, 6)
    asked = [(topic_ids[t], document_ids[d]) for t in range(6) for d in range(6) if (t + 2 * d) % 4 == 0]
    rows = _lookup(draft_campaign).rows(asked)
    position = {pk: index for index, pk in enumerate(topic_ids)} | {
        pk: index for index, pk in enumerate(document_ids)
    }
    expected = {
        (topic, document, (position[topic] + position[document]) % 3)
        for topic, document in asked
        if position[topic] != position[document]
    }
    assert set(rows) == expected and len(rows) == len(expected)
    assert _lookup(draft_campaign).rows([]) == []


def test_each_pair_probes_the_index_even_when_the_statistics_say_the_table_is_empty(
    draft_campaign: Campaign,
) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {connection.ops.quote_name(Judgment._meta.db_table)}")  # empty now
    topic_ids, document_ids = _stored_qrels(draft_campaign, 40, 60)
    asked = [(topic, document) for topic in topic_ids[:10] for document in document_ids[:25]]
    sql, arguments = _lookup(draft_campaign).statement(asked)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"EXPLAIN (FORMAT TEXT) {sql}", arguments)
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert plan.lstrip().startswith("Nested Loop"), plan
            assert "Values Scan" in plan.split("->")[1], plan  # the pairs are the outer side
            assert "qrels_judgment_unique" in plan and "document_id = " in plan, plan
            assert "Hash" not in plan and "Seq Scan on labeling_judgment" not in plan, plan
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", arguments)
            plan = "\n".join(str(row[-1]) for row in cursor.fetchall())
            probe = "SEARCH stored USING INDEX qrels_judgment_unique"
            probe += " (campaign_id=? AND topic_id=? AND document_id=?)"
            assert plan.index("SCAN wanted") < plan.index(probe), plan
