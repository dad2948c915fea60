"""The built-in lexical judge: BM25 of each topic's title and description against its pooled
documents, the campaign's documents as the collection, cut into grades by thresholds fitted
once, at the first run of its version, on the human labels present then. Weak, and no network.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from estimation.judges.answers import JudgeAnswer
from estimation.judges.lexical import (
    Bm25Collection,
    Thresholds,
    fit_thresholds,
    lexical_query,
    pool_scores,
    rationale,
)
from labeling.models import Campaign, Document, Topic
from sampling.judge_calls import judge_run_done, judge_run_finish, pending_pairs
from sampling.judge_kinds.base import JudgeKind
from sampling.label_model import judged_grades
from sampling.models import Judge, JudgeRun, JudgeVersion
from sampling.pool_arrays import PoolArrays, pool_arrays_for

LEXICAL_MODEL = "BM25 over the campaign's documents (built-in lexical judge, weak)"


class LexicalKind(JudgeKind):
    name = "lexical"
    label = "Built-in lexical judge (BM25, weak)"
    api_help = "the built-in BM25 judge (weak, no network)"
    edit_refits = True
    edited = "its thresholds are refitted at its next run"
    about_template = "graded/judges/lexical_about.html"
    manage_template = "graded/judges/lexical_manage.html"

    def creation_defaults(self, campaign: Campaign, *, model: str, prompt: str) -> tuple[str, str]:
        return model.strip() or LEXICAL_MODEL, prompt

    def step(self, run: JudgeRun, pending: list[tuple[str, str]]) -> str:
        return _lexical_step(run, pending)

    def warnings(self, judge: Judge) -> list[str]:
        return [
            f"{judge.name} is the built-in lexical judge: BM25 word overlap, a weak judge; it saves human "
            "labels only where word overlap says something about relevance"
        ]


def lexical_thresholds(judge: Judge, arrays: PoolArrays, scores: Mapping[str, np.ndarray]) -> Thresholds:
    """The lexical judge's thresholds for its version: fitted at its first run from the human
    labels present then (on the pool's normalised `scores`, per topic in slot order), and kept
    (module docstring)."""
    if judge.thresholds:
        return Thresholds(tuple(float(c) for c in judge.thresholds["cuts"]), str(judge.thresholds["source"]))
    campaign = judge.campaign
    grades = judged_grades(campaign, arrays)
    pool_values, labelled_values, labelled_grades = [], [], []
    for topic, qid in enumerate(arrays.topic_qids):
        # docnos[t] are the topic's used slots 0..len - 1, in slot order.
        topic_grades = grades[topic, : len(arrays.docnos[topic])]
        seen = topic_grades >= 0
        pool_values.append(scores[qid])
        labelled_values.append(scores[qid][seen])
        labelled_grades.append(topic_grades[seen])
    thresholds = fit_thresholds(
        np.concatenate(pool_values) if pool_values else np.zeros(0),
        np.concatenate(labelled_values) if labelled_values else np.zeros(0),
        np.concatenate(labelled_grades) if labelled_grades else np.zeros(0, dtype=np.int64),
        n_grades=campaign.grade_count,
    )
    Judge.objects.filter(pk=judge.pk).update(thresholds=thresholds.as_dict())
    JudgeVersion.objects.filter(judge=judge, number=judge.version).update(
        asked_with={"thresholds": thresholds.as_dict()}
    )
    judge.thresholds = thresholds.as_dict()
    return thresholds


def _lexical_scores(campaign: Campaign, pool: dict[str, list[str]]) -> dict[str, np.ndarray]:
    """Normalised BM25 of each topic's title and description against its pooled documents, the
    campaign's documents as the collection."""
    texts = {
        docno: f"{title}\n{text}"
        for docno, title, text in Document.objects.filter(campaign=campaign).values_list(
            "docno", "title", "text"
        )
    }
    queries = {
        qid: lexical_query(title, description)
        for qid, title, description in Topic.objects.filter(campaign=campaign).values_list(
            "qid", "title", "description"
        )
    }
    return pool_scores(Bm25Collection.of(texts), queries, pool)


def _lexical_step(run: JudgeRun, pending: list[tuple[str, str]]) -> str:
    """Every pending pair at once (BM25 of a campaign takes seconds, not minutes)."""
    judge = run.judge
    # One BM25 pass over the pool serves the thresholds (first run) and the labels.
    arrays = pool_arrays_for(judge.campaign)
    pool = {qid: list(docnos) for qid, docnos in zip(arrays.topic_qids, arrays.docnos, strict=True)}
    scores = _lexical_scores(judge.campaign, pool)
    thresholds = lexical_thresholds(judge, arrays, scores)
    score_of = {
        (qid, docno): float(value)
        for qid, docnos in pool.items()
        for docno, value in zip(docnos, scores[qid], strict=True)
    }
    for qid, docno in pending:
        score = score_of.get((qid, docno), 0.0)
        grade = int(thresholds.classes(np.array([score]))[0])
        LexicalKind.store(
            run, JudgeAnswer((qid, docno), grade=grade, text=rationale(score, thresholds), attempts=0), 0.0
        )
        if JudgeRun.objects.filter(pk=run.pk, cancel_requested=True).exists():
            judge_run_finish(run.pk, JudgeRun.Status.CANCELLED)
            return "cancelled"
    return "more" if pending_pairs(run, limit=1) else judge_run_done(run.pk)
