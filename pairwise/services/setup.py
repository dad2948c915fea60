"""Writes: a campaign's pairwise settings, and the heaps or pair tasks made from its runs."""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from estimation.topk.state import result, start_topk
from labeling.models import Campaign, Document, Topic
from pairwise.models import Comparison, PairTask, PairwiseSettings, TopKHeap
from pairwise.selectors import is_pair_campaign, is_topk, topic_candidates

SETTING_FIELDS = (
    "k",
    "documents_per_topic",
    "pairs_per_topic",
    "use_prior_order",
    "reuse_answers",
    "use_transitivity",
    "allow_bad_shortcut",
)
# The same bounds on every database (SQLite would store any integer, PostgreSQL refuses what
# overflows the column); far above anything a campaign judges.
SETTING_RANGES = {"k": (1, 1000), "documents_per_topic": (2, 10_000), "pairs_per_topic": (1, 100_000)}


@transaction.atomic
def pairwise_configure(*, campaign: Campaign, mode: str | None = None, **fields: Any) -> PairwiseSettings:
    """Create or change the campaign's pairwise settings; refused once pairs were answered.
    With `mode`, the campaign first switches to that judging mode (which configures it)."""
    if mode is not None and mode != campaign.judging_mode:
        from labeling.services.campaigns import campaign_mode_set

        campaign_mode_set(campaign=campaign, mode_name=mode, settings=fields)
        return PairwiseSettings.objects.get(campaign=campaign)
    if not is_pair_campaign(campaign):
        raise ValueError(
            f"a {campaign.judging_mode} campaign does not judge in pairs: choose a pair mode first"
        )
    unknown = set(fields) - set(SETTING_FIELDS)
    if unknown:
        raise ValueError(f"unknown pairwise setting(s): {', '.join(sorted(unknown))}")
    pairwise, _ = PairwiseSettings.objects.select_for_update().get_or_create(campaign=campaign)
    changed = {name: value for name, value in fields.items() if getattr(pairwise, name) != value}
    if changed and Comparison.objects.filter(campaign=campaign).exists():
        raise ValueError("pairwise settings cannot change once pairs were judged")
    for name, value in changed.items():
        setattr(pairwise, name, value)
    for name, (low, high) in SETTING_RANGES.items():
        value = getattr(pairwise, name)
        if not low <= value <= high:
            raise ValueError(f"{name} must be from {low} to {high}, got {value}")
    if changed and pairwise.prepared_at is not None:
        # Nothing answered yet: rebuild the heaps or pairs with the new settings on demand.
        TopKHeap.objects.filter(campaign=campaign).delete()
        PairTask.objects.filter(campaign=campaign).delete()
        pairwise.prepared_at = None
    pairwise.save()
    return pairwise


def seed_for(campaign: Campaign, *parts: int) -> int:
    """A seed derived from the campaign's seed and ids, so random choices replay."""
    return (campaign.seed + sum(7919**i * part for i, part in enumerate(parts, start=1))) % 2**63


@transaction.atomic
def pairwise_prepare(*, campaign: Campaign, now: datetime | None = None) -> int:
    """Make the heaps (top-k) or the pair tasks (pairwise) from the imported runs, once.

    Each topic compares the best `documents_per_topic` documents of the runs fused by
    reciprocal rank; returns how many heaps or tasks were made (0 when already prepared).
    """
    pairwise = PairwiseSettings.objects.select_for_update().filter(campaign=campaign).first()
    if pairwise is None:
        raise ValueError("this campaign has no pairwise settings")
    if pairwise.prepared_at is not None:
        return 0
    topics = {topic.qid: topic for topic in Topic.objects.filter(campaign=campaign)}
    candidates = topic_candidates(campaign, pairwise.documents_per_topic)
    overlap = max(1, campaign.overlap)
    made: list[Any] = []
    if is_topk(campaign):
        for qid, docnos in candidates.items():
            for slot in range(overlap):
                state = start_topk(
                    docnos,
                    pairwise.k,
                    prior_order=docnos if pairwise.use_prior_order else None,
                    reuse_answers=pairwise.reuse_answers,
                    use_transitivity=pairwise.use_transitivity,
                    allow_bad_shortcut=pairwise.allow_bad_shortcut,
                    seed=seed_for(campaign, topics[qid].pk, slot),
                )
                summary = result(state)  # one document: nothing to ask
                made.append(
                    TopKHeap(
                        campaign=campaign,
                        topic=topics[qid],
                        slot=slot,
                        state=state.to_json(),
                        done=summary.done,
                        order=list(summary.order),
                    )
                )
        TopKHeap.objects.bulk_create(made)
    else:
        document_ids = dict(Document.objects.filter(campaign=campaign).values_list("docno", "pk"))
        order = 0
        for qid, docnos in candidates.items():
            rng = np.random.default_rng(seed_for(campaign, topics[qid].pk))
            pairs = list(itertools.combinations(docnos, 2))
            if len(pairs) > pairwise.pairs_per_topic:
                pairs = [
                    pairs[i] for i in sorted(rng.choice(len(pairs), pairwise.pairs_per_topic, replace=False))
                ]
            for first, second in pairs:
                order += 1
                swapped = bool(rng.random() < 0.5)
                left, right = (second, first) if swapped else (first, second)
                for slot in range(overlap):
                    made.append(
                        PairTask(
                            campaign=campaign,
                            topic=topics[qid],
                            slot=slot,
                            order=order,
                            left_id=document_ids[left],
                            right_id=document_ids[right],
                            swapped=swapped,
                        )
                    )
        PairTask.objects.bulk_create(made, batch_size=1000)
    pairwise.prepared_at = now or timezone.now()
    pairwise.save(update_fields=["prepared_at"])
    return len(made)
