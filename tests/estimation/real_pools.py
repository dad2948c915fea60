"""Real data for the seeded coverage tests: per-topic metric values of two systems and the
query-level sampling distributions a campaign would draw from.

- Robust03 (TREC 2003 Robust, qrels grades 0-2): two real submitted runs, DCG@10 and ERR@10
  with the qrels as the oracle (unjudged documents count 0, as in trec_eval).
- MSLR sample (grades 0-4): the first 5,000 lines of Fold1 train and test, the cut-off last
  query of each file dropped; the systems are two single features (BM25 = feature 110 and
  LMIR.JM = feature 130), ties broken by docno descending as trec_eval does.

Everything is read through `estimation.formats.trec` / `estimation.sampling.pool_build`, never copied.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from estimation.formats.trec import read_qrels, read_run
from estimation.metrics.spec import Metric
from estimation.metrics.values import metric_values
from estimation.sampling.pool_build import build_pool
from estimation.sampling.queries import optimal_query_distribution

ROBUST_RUNS = ("input.aplrob03a.gz", "input.UIUC03Rd1.gz")
MSLR_FEATURES = (110, 130)


@dataclass(frozen=True)
class RealPool:
    """Per-topic ``L_a``, ``L_b`` (shape (m, 2)) and the active ``q`` for one and for the difference."""

    name: str
    values: np.ndarray
    active_one: np.ndarray
    active_difference: np.ndarray


def _pool_values(name: str, runs: list, qrels: dict[str, dict[str, int]], metric: Metric) -> RealPool:
    pool = build_pool(runs, metric.cutoff, y_max=metric.y_max)
    columns = []
    for run in runs:
        rankings = run.rankings if hasattr(run, "rankings") else run[1]
        grades = np.full((len(pool.query_ids), metric.cutoff), -1, dtype=np.int64)
        for row, qid in enumerate(pool.query_ids):
            judged = qrels.get(qid, {})
            ranked = rankings.get(qid, ())[: metric.cutoff]
            grades[row, : len(ranked)] = [max(0, judged.get(doc, 0)) for doc in ranked]
        columns.append(metric_values(grades, metric))
    one = optimal_query_distribution(pool, metric, "one", (0,), unit_costs=True).q
    difference = optimal_query_distribution(pool, metric, "difference", (0, 1), unit_costs=True).q
    return RealPool(name, np.stack(columns, axis=1), one, difference)


def robust03_pool(shared_data: Path, metric_name: str = "DCG") -> RealPool:
    qrels = read_qrels(shared_data / "robust03" / "qrels.txt")
    runs = [read_run(shared_data / "robust03" / "runs" / name) for name in ROBUST_RUNS]
    return _pool_values(f"Robust03 {metric_name}@10", runs, qrels, Metric(metric_name, 10, y_max=2))


def mslr_pool(shared_data: Path, metric_name: str = "DCG") -> RealPool:
    qrels: dict[str, dict[str, int]] = {}
    scores: dict[int, dict[str, dict[str, float]]] = {feature: {} for feature in MSLR_FEATURES}
    for part in ("train", "test"):
        path = shared_data / "mslr_sample" / f"msn1.fold1.{part}.5k.txt.gz"
        with gzip.open(path, "rt") as lines:
            rows = [line.split() for line in lines if line.strip()]
        last = rows[-1][1]  # the file is cut inside its last query: drop it
        for position, fields in enumerate(row for row in rows if row[1] != last):
            qid = f"{part}-{fields[1].split(':')[1]}"
            doc = f"d{position:05d}"
            qrels.setdefault(qid, {})[doc] = int(fields[0])
            features = dict(field.split(":") for field in fields[2:])
            for feature in MSLR_FEATURES:
                scores[feature].setdefault(qid, {})[doc] = float(features[str(feature)])
    runs = []
    for feature in MSLR_FEATURES:
        rankings = {
            qid: tuple(sorted(docs, key=lambda doc: (docs[doc], doc), reverse=True))
            for qid, docs in scores[feature].items()
        }
        runs.append((f"feature{feature}", rankings))
    return _pool_values(f"MSLR {metric_name}@10", runs, qrels, Metric(metric_name, 10, y_max=4))


def topic_budget_draws(
    q: np.ndarray, n_topics: int, n_repetitions: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Draws of each repetition of the budget loop with equal topic costs and a budget of
    ``n_topics`` topics: draw with replacement from ``q`` until the next draw would be a new
    topic beyond the budget (repeats cost nothing and count as draws)."""
    width = 8 * n_topics
    draws = rng.choice(q.size, size=(n_repetitions, width), p=q)
    out = []
    for row in draws:
        _, first = np.unique(row, return_index=True)
        first.sort()
        while first.size <= n_topics:  # the pool ran out of new topics within the row: draw more
            row = np.concatenate([row, rng.choice(q.size, size=width, p=q)])
            _, first = np.unique(row, return_index=True)
            first.sort()
            if row.size > 200 * width:
                break
        stop = first[n_topics] if first.size > n_topics else row.size
        out.append(row[:stop])
    return out
