"""The top-k state machine on real MQ2008 topics: every improvement keeps the exact top-10."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from estimation.formats.trec import read_qrels, read_run
from estimation.topk.state import answer, mark_bad, next_pair, result, start_topk

K = 10


@pytest.fixture(scope="module")
def mq2008_topics(shared_data: Path) -> list[dict]:
    """Six topics with >= 50 judged documents, 50 sampled; truth = grade, then RankBoost."""
    qrels = read_qrels(shared_data / "mq2008" / "qrels.txt")
    tie_break = read_run(shared_data / "mq2008" / "runs" / "RankBoost.run")
    prior = read_run(shared_data / "mq2008" / "feature_runs" / "MQ2008_f25_BM25_whole.run")
    large = sorted((qid for qid, judged in qrels.items() if len(judged) >= 50), key=int)[:6]
    topics = []
    for qid in large:
        judged = sorted(qrels[qid])
        rng = np.random.default_rng(int(qid))
        sample = [judged[i] for i in sorted(rng.choice(len(judged), 50, replace=False))]
        position = {docno: rank for rank, docno in enumerate(tie_break.rankings[qid])}
        truth = sorted(sample, key=lambda docno: (-qrels[qid][docno], position[docno]))
        in_sample = set(sample)
        topics.append(
            {
                "documents": sample,
                "grade": {docno: qrels[qid][docno] for docno in sample},
                "truth": truth,
                "prior": [docno for docno in prior.rankings[qid] if docno in in_sample],
            }
        )
    return topics


def judge(topic: dict, *, prior: bool, improvements: bool, seed: int) -> tuple[tuple[str, ...], int]:
    value = {docno: -rank for rank, docno in enumerate(topic["truth"])}
    bad = {d for d in topic["truth"][K:] if topic["grade"][d] == 0} if improvements else set()
    state = start_topk(
        topic["documents"],
        K,
        prior_order=topic["prior"] if prior else None,
        seed=seed,
        reuse_answers=improvements,
        use_transitivity=improvements,
        allow_bad_shortcut=improvements,
    )
    while (pair := next_pair(state)) is not None:
        shown_bad = [docno for docno in (pair.left, pair.right) if docno in bad]
        if shown_bad:
            state = mark_bad(state, shown_bad[0])
            continue
        state = answer(state, pair, "left" if value[pair.left] > value[pair.right] else "right")
    final = result(state)
    return final.order, final.judgments + final.bad_marks


def test_it_returns_the_identical_top10_with_fewer_actions(mq2008_topics) -> None:
    plain_actions, improved_actions = [], []
    for topic in mq2008_topics:
        plain_order, plain = judge(topic, prior=False, improvements=False, seed=1)
        improved_order, improved = judge(topic, prior=True, improvements=True, seed=1)
        assert plain_order == improved_order == tuple(topic["truth"][:K])
        plain_actions.append(plain)
        improved_actions.append(improved)
    assert np.mean(improved_actions) < np.mean(plain_actions)
