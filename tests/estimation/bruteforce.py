"""Brute-force reference for metrics under a label model: enumerate every label vector.

Independent of ``estimation``'s kernels: gains, discounts and the metrics are written from
their definitions (docs/estimation.md, "Metrics (one query)"), and expectations are plain
sums over ``itertools.product`` of the grades of the items involved, weighted by the product
of their probabilities (labels independent given the query, Sawade et al. eq. 3). Exponential
in the number of items: keep rankings small (n <= 6, |Y| <= 3, or a few more items with fewer
grades).

A ranking here is one query's row of slot indices, ``-1`` for an empty position (which keeps
its rank and contributes nothing), truncated to the metric's cutoff.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from estimation.metrics.spec import Metric

Labels = Mapping[int, int]


def gain(metric: Metric, grade: int) -> float:
    """g(y) for DCG (exp, linear or custom); l(y) = (2^y - 1) / 2^y_max for ERR."""
    if metric.name == "ERR":
        return (2.0**grade - 1.0) / 2.0**metric.y_max
    if metric.gain_values is not None:
        return float(metric.gain_values[grade])
    return float(grade) if metric.gain == "linear" else 2.0**grade - 1.0


def discount(metric: Metric, rank: int) -> float:
    """d(rank) for DCG (1 / log2(rank + 1), or custom); a_rank = 1 / rank for ERR. Rank from 1."""
    if metric.name == "ERR":
        return 1.0 / rank
    if metric.discount_values is not None:
        return float(metric.discount_values[rank - 1])
    return 1.0 / math.log2(rank + 1)


def metric_value(metric: Metric, ranking: Sequence[int], labels: Labels) -> float:
    """DCG@K or ERR@K of one ranking for one complete assignment of grades to its slots."""
    total = 0.0
    not_stopped = 1.0
    for rank, slot in enumerate(list(ranking)[: metric.cutoff], start=1):
        if slot < 0:
            continue
        value = gain(metric, labels[slot])
        if metric.name == "ERR":
            # Chapelle et al. 2009: the user stops at rank r with probability l(y_r) times the
            # probability of not having stopped above.
            total += discount(metric, rank) * value * not_stopped
            not_stopped *= 1.0 - value
        else:
            total += discount(metric, rank) * value
    return total


def expectation(theta_query: np.ndarray, slots: Sequence[int], function: Callable[[Labels], float]) -> float:
    """E[function(labels)] over all grade assignments of ``slots`` (theta_query: (n, G))."""
    slots = sorted({int(slot) for slot in slots if slot >= 0})
    n_grades = theta_query.shape[1]
    total = 0.0
    for grades in itertools.product(range(n_grades), repeat=len(slots)):
        probability = 1.0
        for slot, grade in zip(slots, grades, strict=True):
            probability *= float(theta_query[slot, grade])
        if probability == 0.0:
            continue
        total += probability * function(dict(zip(slots, grades, strict=True)))
    return total


def _used(ranking: Sequence[int], metric: Metric) -> list[int]:
    return [int(slot) for slot in list(ranking)[: metric.cutoff] if slot >= 0]


def ranking_mean_variance(
    theta_query: np.ndarray, ranking: Sequence[int], metric: Metric
) -> tuple[float, float]:
    """(E[L], Var[L]) of one query's ranking by enumeration."""
    slots = _used(ranking, metric)
    mean = expectation(theta_query, slots, lambda labels: metric_value(metric, ranking, labels))
    second = expectation(theta_query, slots, lambda labels: metric_value(metric, ranking, labels) ** 2)
    return mean, second - mean**2


def second_moment_about(
    theta_query: np.ndarray, ranking: Sequence[int], metric: Metric, reference: float
) -> float:
    """E[(L - R)^2] of one query's ranking by enumeration."""
    slots = _used(ranking, metric)
    return expectation(
        theta_query, slots, lambda labels: (metric_value(metric, ranking, labels) - reference) ** 2
    )


def difference_mean_variance(
    theta_query: np.ndarray, ranking_a: Sequence[int], ranking_b: Sequence[int], metric: Metric
) -> tuple[float, float]:
    """(E[delta], Var[delta]) for delta = L(ranking_a) - L(ranking_b), by enumeration."""
    slots = _used(ranking_a, metric) + _used(ranking_b, metric)

    def delta(labels: Labels) -> float:
        return metric_value(metric, ranking_a, labels) - metric_value(metric, ranking_b, labels)

    mean = expectation(theta_query, slots, delta)
    second = expectation(theta_query, slots, lambda labels: delta(labels) ** 2)
    return mean, second - mean**2


def cross_moment(
    theta_query: np.ndarray, ranking_a: Sequence[int], ranking_b: Sequence[int], metric: Metric
) -> float:
    """E[L(ranking_a) L(ranking_b)] by enumeration."""
    slots = _used(ranking_a, metric) + _used(ranking_b, metric)
    return expectation(
        theta_query,
        slots,
        lambda labels: metric_value(metric, ranking_a, labels) * metric_value(metric, ranking_b, labels),
    )
