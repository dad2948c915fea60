"""Judges from files: an external calibration from human qrels and a judge's labels, and a
judge's labels as qrels (for judge-only metric values)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from estimation.formats.judge_labels import JudgeLabelLine, read_judge_labels
from estimation.formats.trec import InputFileError, read_qrels
from estimation.judges.calibration import Calibration, fit_calibration, judge_classes
from estimation.metrics.spec import Metric


def external_calibration(
    human_qrels: str | os.PathLike[str], judge_labels: str | os.PathLike[str], *, metric: Metric
) -> Calibration:
    """Fit h and sigma on the pairs both files label (the same judge version on other topics).

    Human grades above the metric's top grade are an error naming the file; negative human
    grades count 0 (as in every qrels reader).
    """
    humans = read_qrels(human_qrels)
    judge = read_judge_labels(judge_labels, y_max=metric.y_max)
    return calibration_from_pairs(humans, judge, metric=metric, source_name=os.fspath(human_qrels))


def calibration_from_pairs(
    humans: Mapping[str, Mapping[str, int]],
    judge: Mapping[tuple[str, str], JudgeLabelLine],
    *,
    metric: Metric,
    source_name: str = "<human qrels>",
) -> Calibration:
    """h and sigma from the (qid, docno) pairs both the human grades and the judge's labels hold."""
    n_grades = metric.y_max + 1
    gains = metric.gain_table()
    pairs = [(qid, docno) for qid, grades in humans.items() for docno in grades if (qid, docno) in judge]
    if not pairs:
        raise InputFileError(
            source_name, None, "no (query, document) pair is labelled by both the humans and the judge"
        )
    human_grades = np.array([humans[qid][docno] for qid, docno in pairs])
    if human_grades.max() > metric.y_max:
        raise InputFileError(
            source_name, None, f"human grade {int(human_grades.max())} is above the top grade {metric.y_max}"
        )
    classes = judge_classes(
        [judge[pair].grade for pair in pairs], [judge[pair].probs for pair in pairs], n_grades=n_grades
    )
    return fit_calibration(classes, gains[human_grades], n_grades=n_grades, source="external")


def judge_qrels(
    judge: Mapping[tuple[str, str], JudgeLabelLine], *, n_grades: int
) -> dict[str, dict[str, int]]:
    """The judge's labels as qrels: its grade, or the grade nearest a distribution's expected grade."""
    pairs = list(judge)
    classes = judge_classes(
        [judge[pair].grade for pair in pairs], [judge[pair].probs for pair in pairs], n_grades=n_grades
    )
    qrels: dict[str, dict[str, int]] = {}
    for (qid, docno), grade in zip(pairs, classes.tolist(), strict=True):
        qrels.setdefault(qid, {})[docno] = grade
    return qrels
