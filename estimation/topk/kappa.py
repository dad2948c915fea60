"""Position-aware labels from a top-k ground truth, and kappa-NDCG@l / kappa-ERR.

Niu et al. (SIGIR 2012), sections 3.2.1 and 3.3 (eq. 2 and 3); formulas in
``docs/judging.md``, "Labels from a top-k ground truth":

- labels ``y = k + 1 - position`` for the top-k documents (k .. 1), ``y = 0`` for the rest;
- ``kappa-NDCG@l = (1/N'_l) sum_{j<=l} (2^{y_j} - 1) / log2(1 + j)``, ``N'_l`` the value of
  the ideal ranking (the top-k order itself);
- ``kappa-ERR = sum_s (1/s) R(y_s) prod_{t<s} (1 - R(y_t))``, ``R(y) = (2^y - 1) / 2^k``.
  The paper prints a ``1/n`` factor; standard ERR (Chapelle et al. 2009), and this project,
  use ``1/s``, the rank.

These are nDCG with exponential gain and ERR on the grade scale ``0..k``, so the metric
kernel of `estimation.metrics.values` computes them: ``Metric("nDCG", l, gain="exp", y_max=k)`` and
``Metric("ERR", depth, y_max=k)`` with the position-aware labels as qrels. kappa-ERR sums
over all n positions; documents outside the top k add nothing (``R(0) = 0``), so ERR at any
depth reaching the ranking's end gives the same value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from estimation.formats.trec import Run
from estimation.metrics.spec import Metric
from estimation.metrics.values import RunEvaluation, err, ndcg, summarize_run

TopKOrders = Mapping[str, Sequence[str]]


def position_labels(order: Sequence[str], k: int) -> dict[str, int]:
    """``docno -> k + 1 - position`` for a top-k order, best first (Niu et al. 2012, 3.2.1).

    Documents not in `order` have label 0 (absent from the mapping). An order shorter than
    k (fewer documents, or documents marked clearly irrelevant) keeps the labels of its
    positions: the best document is always labelled k.

    Raises
    ------
    ValueError
        k < 1, an order longer than k, or a document listed twice.
    """
    _check_order(order, k)
    return {docno: k + 1 - position for position, docno in enumerate(order, start=1)}


def kappa_ndcg(ranking: Sequence[str], order: Sequence[str], k: int, cutoff: int) -> float:
    """kappa-NDCG@l of one ranking against a top-k order (Niu et al. 2012, eq. 2).

    Parameters
    ----------
    ranking : sequence of str
        The system's documents in rank order.
    order : sequence of str
        The top-k ground truth, best first.
    k : int
        The k of the top-k procedure (the top label).
    cutoff : int
        l.
    """
    labels = position_labels(order, k)
    grades = [labels.get(docno, 0) for docno in _checked_ranking(ranking)]
    return ndcg(grades, list(labels.values()), kappa_metric("nDCG", cutoff, k))


def kappa_err(ranking: Sequence[str], order: Sequence[str], k: int) -> float:
    """kappa-ERR of one ranking against a top-k order (Niu et al. 2012, eq. 3, with 1/s)."""
    labels = position_labels(order, k)
    grades = [labels.get(docno, 0) for docno in _checked_ranking(ranking)]
    return err(grades, kappa_metric("ERR", len(grades), k))


def kappa_metric(name: str, cutoff: int, k: int) -> Metric:
    """The `Metric` that is kappa-NDCG@cutoff (``"nDCG"``) or kappa-ERR (``"ERR"``) for k."""
    if name not in ("nDCG", "ERR"):
        raise ValueError(f"kappa metrics are nDCG and ERR, got {name!r}")
    return Metric(name, cutoff, gain="exp", y_max=k)  # type: ignore[arg-type]  # the name is checked to be one of the literal metric names


def topk_qrels(
    orders: TopKOrders, k: int, documents: Mapping[str, Sequence[str]] | None = None
) -> dict[str, dict[str, int]]:
    """Qrels of position-aware labels, one topic per top-k order (also for TREC qrels export).

    Parameters
    ----------
    orders : mapping of str to sequence of str
        topic -> top-k order, best first.
    k : int
    documents : mapping of str to sequence of str, optional
        topic -> every judged document, so the rest appears with label 0.
    """
    qrels: dict[str, dict[str, int]] = {}
    for topic, order in orders.items():
        labels = position_labels(order, k)
        rest = [] if documents is None else [d for d in documents.get(topic, ()) if d not in labels]
        qrels[topic] = {**labels, **dict.fromkeys(rest, 0)}
    return qrels


def summarize_run_kappa(
    orders: TopKOrders, run: Run | Mapping[str, Sequence[str]], k: int, metric: str
) -> RunEvaluation:
    """kappa-NDCG@l or kappa-ERR of a run on every topic with a top-k order.

    Parameters
    ----------
    orders : mapping of str to sequence of str
        topic -> top-k ground truth, best first.
    run : Run or mapping of str to sequence of str
    k : int
    metric : str
        ``"kappa-NDCG@l"`` (e.g. ``"kappa-NDCG@10"``) or ``"kappa-ERR"``.

    Returns
    -------
    RunEvaluation
        Per topic and the mean over the topics of `orders` (a topic the run omits scores 0),
        with ``metric`` the underlying nDCG / ERR `Metric`.
    """
    if metric == "kappa-ERR":
        rankings = run.rankings if isinstance(run, Run) else run
        depth = max((len(ranking) for ranking in rankings.values()), default=1)
        spec = kappa_metric("ERR", max(depth, 1), k)
    elif metric.startswith("kappa-NDCG@") and metric[len("kappa-NDCG@") :].isdigit():
        spec = kappa_metric("nDCG", int(metric[len("kappa-NDCG@") :]), k)
    else:
        raise ValueError(f"unknown kappa metric {metric!r}; expected e.g. 'kappa-NDCG@10' or 'kappa-ERR'")
    return summarize_run(topk_qrels(orders, k), run, spec)


def _check_order(order: Sequence[str], k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if len(order) > k:
        raise ValueError(f"a top-{k} order cannot list {len(order)} documents")
    if len(set(order)) != len(order):
        raise ValueError("the top-k order lists a document twice")


def _checked_ranking(ranking: Sequence[str]) -> Sequence[str]:
    if len(ranking) == 0:
        raise ValueError("ranking: a ranking must not be empty")
    if len(set(ranking)) != len(ranking):
        raise ValueError("ranking lists a document twice")
    return ranking


__all__ = [
    "kappa_err",
    "kappa_metric",
    "kappa_ndcg",
    "position_labels",
    "summarize_run_kappa",
    "topk_qrels",
]
