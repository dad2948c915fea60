"""DCG, nDCG and ERR at a cutoff: per query, over a padded grade matrix, and over a TREC run.

One vectorised kernel, `metric_values`, holds each formula once; the per-query functions
and `evaluate_run` call it. Formulas (see ``docs/estimation.md``, "Metrics"):

- DCG@K (Jarvelin & Kekalainen 2002): ``sum_{i<=K} g(y_i) d(i)``, ``d(i) = 1 / log2(i + 1)``,
  gain ``g(y) = 2**y - 1`` (``gain="exp"``, Burges et al. 2005; ir_measures
  ``nDCG(dcg='exp-log2')``, gdeval) or ``g(y) = y`` (``gain="linear"``; trec_eval's
  ``ndcg_cut``), or the metric's custom gains and discounts.
- nDCG@K: DCG@K over the DCG@K of the ideal ranking of the query's judged grades (the judged
  documents sorted by gain), 0 when that ideal DCG is 0.
- ERR@K (Chapelle et al. 2009, eq. 4 with the stopping probability of their section 4):
  ``sum_{i<=K} (1/i) l(y_i) prod_{j<i} (1 - l(y_j))``, ``l(y) = (2**y - 1) / 2**y_max``
  with ``y_max`` the campaign's top grade. gdeval (ir_measures' ``ERR@k``) hard-codes
  ``y_max = 4``: on a 0-2 scale ERR with ``y_max = 2`` is several times larger.

Grades are integers in ``0..metric.y_max`` for every metric: a grade above ``y_max`` has no
entry in the gain table, and for ERR it would make ``l(y) > 1``; raising ``y_max`` is the fix.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from estimation.formats.trec import Run
from estimation.metrics.spec import Metric

EMPTY = -1

Qrels = Mapping[str, Mapping[str, int]]
Rankings = Mapping[str, Sequence[str]]


# ---------------------------------------------------------------------------------------------
# The kernel


def metric_values(
    grade_matrix: np.ndarray, metric: Metric, ideal_grade_matrix: np.ndarray | None = None
) -> np.ndarray:
    """The metric of every row of a padded grade matrix.

    Parameters
    ----------
    grade_matrix : array of int, shape (m, K')
        Row ``q`` holds the grades of query ``q``'s ranking in rank order; ``-1`` marks an
        empty position (a ranking shorter than K', or a query the system omits) and
        contributes nothing. Columns past ``metric.cutoff`` are ignored.
    metric : Metric
    ideal_grade_matrix : array of int, shape (m, J), optional
        nDCG only (required there): the judged grades of each query, in any order, ``-1``
        padded. The ideal ranking puts the highest gains first.

    Returns
    -------
    ndarray, shape (m,)
        DCG@K, nDCG@K or ERR@K per row (see the module docstring for the formulas).

    Raises
    ------
    ValueError
        A matrix that is not 2-D integer, a grade outside ``-1..y_max``, a missing ideal
        matrix for nDCG or one given for another metric, or mismatched row counts.
    """
    grades = _check_grade_matrix(grade_matrix, metric, name="grade_matrix")[:, : metric.cutoff]
    if metric.name != "nDCG" and ideal_grade_matrix is not None:
        raise ValueError(f"{metric}: only nDCG uses ideal_grade_matrix")
    gains = _gain_lookup(grades, metric)
    if metric.name == "ERR":
        return _err_from_stop_probabilities(gains)
    dcg_values = _dcg_from_gains(gains, metric)
    if metric.name == "DCG":
        return dcg_values
    if ideal_grade_matrix is None:
        raise ValueError(f"{metric}: nDCG needs ideal_grade_matrix (the judged grades of each query)")
    ideal = _check_grade_matrix(ideal_grade_matrix, metric, name="ideal_grade_matrix")
    if ideal.shape[0] != grades.shape[0]:
        raise ValueError(
            f"ideal_grade_matrix has {ideal.shape[0]} rows but grade_matrix has {grades.shape[0]}"
        )
    # Sort gains, not grades: custom gain tables need not grow with the grade.
    ideal_gains = -np.sort(-_gain_lookup(ideal, metric), axis=1)[:, : metric.cutoff]
    ideal_dcg = _dcg_from_gains(ideal_gains, metric)
    positive = ideal_dcg > 0
    return np.divide(dcg_values, ideal_dcg, out=np.zeros_like(dcg_values), where=positive)


def _check_grade_matrix(grade_matrix: np.ndarray, metric: Metric, *, name: str) -> np.ndarray:
    grades = np.asarray(grade_matrix)
    if grades.ndim != 2:
        raise ValueError(f"{name} must be 2-D (queries x positions), got shape {grades.shape}")
    if grades.dtype.kind == "f":
        if not np.all(np.isfinite(grades)) or np.any(grades != np.round(grades)):
            raise ValueError(f"{name}: grades must be integers")
    elif grades.dtype.kind not in "iub" and grades.size:
        raise ValueError(f"{name}: grades must be integers, got dtype {grades.dtype}")
    grades = grades.astype(np.int64, copy=False)
    if grades.size and (grades.min() < EMPTY or grades.max() > metric.y_max):
        bad = grades[(grades < EMPTY) | (grades > metric.y_max)][0]
        raise ValueError(
            f"{name}: grade {int(bad)} is outside 0..{metric.y_max} (y_max of {metric}; -1 marks an empty "
            "position); raise y_max if the scale is larger"
        )
    return grades


def _gain_lookup(grades: np.ndarray, metric: Metric) -> np.ndarray:
    """g(y) (DCG, nDCG) or l(y) (ERR) per position; 0 where the grade is -1 (empty)."""
    # Appending a 0 makes index -1 (an empty position) read gain 0.
    table = np.append(metric.gain_table(), 0.0)
    return table[grades]


def _dcg_from_gains(gains: np.ndarray, metric: Metric) -> np.ndarray:
    """Discounted sum of a (m, k) gain matrix, k <= cutoff."""
    return gains @ metric.discount_table(gains.shape[1]) if gains.shape[1] else np.zeros(gains.shape[0])


def _err_from_stop_probabilities(stop: np.ndarray) -> np.ndarray:
    """ERR of a (m, k) matrix of stopping probabilities l(y_i) (Chapelle et al. 2009, eq. 4)."""
    m, depth = stop.shape
    if depth == 0:
        return np.zeros(m)
    # Probability that the user reaches position i: prod_{j<i} (1 - l(y_j)).
    reach = np.cumprod(np.hstack([np.ones((m, 1)), 1.0 - stop[:, :-1]]), axis=1)
    return (reach * stop) @ (1.0 / np.arange(1, depth + 1))


# ---------------------------------------------------------------------------------------------
# One query


def dcg(grades: Sequence[int] | np.ndarray, metric: Metric) -> float:
    """DCG@K of one ranking (Jarvelin & Kekalainen 2002) with `metric`'s gain and discount.

    Parameters
    ----------
    grades : sequence of int
        The grades of the ranked documents in rank order (unjudged documents count 0).
    metric : Metric
        A DCG or nDCG metric (nDCG: its unnormalised DCG).

    Raises
    ------
    ValueError
        An empty ranking, a grade outside 0..y_max, or an ERR metric.
    """
    if metric.name == "ERR":
        raise ValueError(f"dcg() needs a DCG or nDCG metric, got {metric}")
    row = _ranking_row(grades, metric)
    return float(metric_values(row, replace(metric, name="DCG"))[0])


def ndcg(
    grades: Sequence[int] | np.ndarray, judged_grades: Sequence[int] | np.ndarray, metric: Metric
) -> float:
    """nDCG@K of one ranking: its DCG@K over the ideal DCG@K of the query's judged grades.

    Parameters
    ----------
    grades : sequence of int
        The ranked documents' grades in rank order (unjudged documents count 0).
    judged_grades : sequence of int
        The grades of every judged document of the query (any order); the ideal ranking
        sorts them by gain. 0 is returned when their ideal DCG is 0 (no relevant document).
    metric : Metric
        A DCG or nDCG metric.

    Raises
    ------
    ValueError
        An empty ranking, a grade outside 0..y_max, or an ERR metric.
    """
    if metric.name == "ERR":
        raise ValueError(f"ndcg() needs a DCG or nDCG metric, got {metric}")
    row = _ranking_row(grades, metric)
    judged = np.asarray(judged_grades)
    if np.any(judged < 0):
        raise ValueError("judged_grades: grades must be >= 0")
    # No judged document: a single empty position, whose ideal DCG is 0.
    ideal_row = judged.reshape(1, -1) if judged.size else np.full((1, 1), EMPTY)
    return float(metric_values(row, replace(metric, name="nDCG"), ideal_row)[0])


def err(grades: Sequence[int] | np.ndarray, metric: Metric) -> float:
    """ERR@K of one ranking (Chapelle et al. 2009) with ``l(y) = (2**y - 1) / 2**y_max``.

    Parameters
    ----------
    grades : sequence of int
        The ranked documents' grades in rank order (unjudged documents count 0).
    metric : Metric
        An ERR metric; its ``y_max`` is the scale's top grade (gdeval assumes 4).

    Raises
    ------
    ValueError
        An empty ranking, a grade outside 0..y_max, or a metric other than ERR.
    """
    if metric.name != "ERR":
        raise ValueError(f"err() needs an ERR metric, got {metric}")
    return float(metric_values(_ranking_row(grades, metric), metric)[0])


def _ranking_row(grades: Sequence[int] | np.ndarray, metric: Metric) -> np.ndarray:
    row = np.asarray(grades)
    if row.ndim != 1:
        raise ValueError(f"grades must be a 1-D sequence in rank order, got shape {row.shape}")
    if row.size == 0:
        raise ValueError("grades: a ranking must not be empty")
    if np.any(row < 0):
        raise ValueError("grades must be >= 0 (count unjudged documents as 0)")
    return row.reshape(1, -1)


# ---------------------------------------------------------------------------------------------
# A run against qrels


@dataclass(frozen=True)
class RunEvaluation:
    """A run's metric per qrels topic and its mean.

    Attributes
    ----------
    run_tag : str
    metric : Metric
    per_query : dict of str to float
        One value per topic of the qrels, in the qrels' order.
    mean : float
        Mean of `per_query` over all qrels topics.
    n_topics : int
        Topics in the qrels (the denominator of `mean`).
    n_topics_without_relevant : int
        Qrels topics with no document graded above 0; they score 0 on every metric.
    n_topics_missing_from_run : int
        Qrels topics the run does not rank; they score 0.
    n_run_topics_without_qrels : int
        Run topics absent from the qrels; ignored, as trec_eval does.
    """

    run_tag: str
    metric: Metric
    per_query: dict[str, float]
    mean: float
    n_topics: int
    n_topics_without_relevant: int
    n_topics_missing_from_run: int
    n_run_topics_without_qrels: int

    @property
    def mean_over_topics_with_relevant(self) -> float:
        """The other common convention: the mean over topics with a relevant document only."""
        kept = self.n_topics - self.n_topics_without_relevant
        if kept == 0:
            return 0.0
        return self.mean * self.n_topics / kept


def evaluate_run(qrels: Qrels | QrelsIndex, run: Run | Rankings, metric: Metric) -> dict[str, float]:
    """The metric of a run on every topic of the qrels.

    Parameters
    ----------
    qrels : mapping of str to mapping of str to int
        qid -> docno -> grade, e.g. from `estimation.formats.trec.read_qrels` (negative grades
        already read as 0). Every grade must lie in ``0..metric.y_max``.
    run : Run or mapping of str to sequence of str
        A `Run` (rankings in trec_eval's order: score descending, then docno descending) or
        qid -> docnos already in rank order.
    metric : Metric

    Returns
    -------
    dict of str to float
        qid -> value for every qrels topic, in the qrels' order. Documents absent from the
        qrels count as grade 0; a topic the run does not rank scores 0; run topics absent
        from the qrels are ignored. See `summarize_run` for the mean and the counts.

    Raises
    ------
    ValueError
        A qrels grade outside ``0..y_max``, an empty qrels, or a run that ranks a topic with
        no documents or lists a document twice.
    """
    return summarize_run(qrels, run, metric).per_query


class QrelsIndex:
    """Qrels prepared once for evaluating many runs against them.

    What `summarize_run` needs of the qrels besides the grades, computed once instead of per
    run: the topics in order, the grade range (checked against each metric's ``y_max``), the
    number of topics without a relevant document, and per metric the ideal grade matrix.

    Parameters
    ----------
    qrels : mapping of str to mapping of str to int
        qid -> docno -> grade, e.g. from `estimation.formats.trec.read_qrels`.

    Raises
    ------
    ValueError
        Qrels without topics.
    """

    def __init__(self, qrels: Qrels) -> None:
        if not qrels:
            raise ValueError("qrels: no topics")
        self.qrels = qrels
        self.topics = list(qrels)
        grades = [grade for grades_of in qrels.values() for grade in grades_of.values()]
        self.lowest_grade = min(grades, default=0)
        self.largest_grade = max(grades, default=0)
        self.n_topics_without_relevant = sum(
            1 for grades_of in qrels.values() if not any(grade > 0 for grade in grades_of.values())
        )
        self._ideal: dict[Metric, np.ndarray] = {}

    def check_grades(self, metric: Metric) -> None:
        """Raise ValueError, naming the first offending judgment, if a grade is outside 0..y_max."""
        if 0 <= self.lowest_grade and self.largest_grade <= metric.y_max:
            return
        for qid, grades_of in self.qrels.items():
            for docno, grade in grades_of.items():
                if not 0 <= grade <= metric.y_max:
                    raise ValueError(
                        f"qrels: grade {grade} of document {docno!r} for topic {qid!r} is outside "
                        f"0..{metric.y_max}; raise y_max (the scale's top grade)"
                    )

    def ideal_grade_matrix(self, metric: Metric) -> np.ndarray:
        """Per topic, the `cutoff` judged grades of highest gain (all the ideal DCG@K needs)."""
        if metric not in self._ideal:
            self._ideal[metric] = _ideal_grade_matrix(self.qrels, self.topics, metric)
        return self._ideal[metric]


def summarize_run(qrels: Qrels | QrelsIndex, run: Run | Rankings, metric: Metric) -> RunEvaluation:
    """`evaluate_run` plus the mean over the qrels' topics and the topic counts.

    The averaging rule: the mean is taken over **every topic of the qrels**, each with
    weight 1/m. Topics the run misses count 0, and so do topics without any relevant
    document (every metric is 0 there; MQ2008 has 140 of its 470). This matches trec_eval
    with ``-c`` and the uniform query weights p(x) = 1/m of the estimators. Tools that drop
    topics without relevant documents report `RunEvaluation.mean_over_topics_with_relevant`.

    Only the first ``metric.cutoff`` documents of each ranking are read: a run cut to that
    depth (`estimation.formats.run_top.read_run_top`) gives the same result. Pass a
    `QrelsIndex` to evaluate many runs against the same qrels.
    """
    index = qrels if isinstance(qrels, QrelsIndex) else QrelsIndex(qrels)
    rankings: Rankings = run.rankings if isinstance(run, Run) else run
    run_tag = run.tag if isinstance(run, Run) else "run"
    index.check_grades(metric)
    topics = index.topics
    cutoff = metric.cutoff
    grade_matrix = np.full((len(topics), cutoff), EMPTY, dtype=np.int64)
    for row, qid in enumerate(topics):
        docnos = rankings.get(qid)
        if docnos is None:
            continue
        if len(docnos) == 0:
            raise ValueError(f"run {run_tag}: topic {qid!r} has an empty ranking")
        if len(set(docnos)) != len(docnos):
            raise ValueError(f"run {run_tag}: topic {qid!r} lists a document twice")
        grades_of = index.qrels[qid]
        top = [grades_of.get(docno, 0) for docno in docnos[:cutoff]]
        grade_matrix[row, : len(top)] = top
    ideal_matrix = index.ideal_grade_matrix(metric) if metric.name == "nDCG" else None
    values = metric_values(grade_matrix, metric, ideal_matrix)
    return RunEvaluation(
        run_tag=run_tag,
        metric=metric,
        per_query={qid: float(value) for qid, value in zip(topics, values.tolist(), strict=True)},
        mean=float(values.mean()),
        n_topics=len(topics),
        n_topics_without_relevant=index.n_topics_without_relevant,
        n_topics_missing_from_run=sum(1 for qid in topics if qid not in rankings),
        n_run_topics_without_qrels=sum(1 for qid in rankings if qid not in index.qrels),
    )


def _ideal_grade_matrix(qrels: Qrels, topics: list[str], metric: Metric) -> np.ndarray:
    """Per topic, the `cutoff` judged grades of highest gain (all the ideal DCG@K needs)."""
    gain_of_grade = metric.gain_table()
    ideal = np.full((len(topics), metric.cutoff), EMPTY, dtype=np.int64)
    for row, qid in enumerate(topics):
        best = heapq.nlargest(metric.cutoff, qrels[qid].values(), key=gain_of_grade.__getitem__)
        ideal[row, : len(best)] = best
    return ideal


__all__ = [
    "QrelsIndex",
    "RunEvaluation",
    "dcg",
    "err",
    "evaluate_run",
    "metric_values",
    "ndcg",
    "summarize_run",
]
