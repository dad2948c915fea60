"""The built-in lexical judge: BM25 of the topic's text against each document, turned into grades.

A weak judge, named as such wherever it shows: it sees words, not meaning. It needs no network
and no model, so the embedded default, a laptop demo and an air-gapped site have a judge from
the first minute, and the judged design still gains where word overlap says something.

Scores are BM25 (k1 = 0.9, b = 0.4, Anserini's defaults) with the campaign's documents as the
collection, divided by the topic's highest pooled score so one set of thresholds serves every
topic. Thresholds on that normalised score come from human labels when there are enough of them
(`fit_thresholds`: the score quantiles that reproduce the labelled items' grade proportions),
otherwise from the pool's own score distribution with a mostly non-relevant default
(`DEFAULT_SHARES`). They are fitted once, when the judge first runs, and kept: labels that moved
with later human grades could make the judged estimate depend on its own draws.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

K1 = 0.9
B = 0.4
MIN_HUMAN_LABELS = 10
"""Fewer human-labelled items (or a single grade among them) and the thresholds are the default."""

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
STOPWORDS = frozenset(
    "a about above after again against all am an and any are as at be because been before being below "
    "between both but by can could did do does doing down during each few for from further had has have "
    "having he her here hers herself him himself his how i if in into is it its itself just me more most "
    "my myself no nor not now of off on once only or other our ours ourselves out over own same she "
    "should so some such than that the their theirs them themselves then there these they this those "
    "through to too under until up very was we were what when where which while who whom why will with "
    "would you your yours yourself yourselves documents document relevant describe describes "
    "discuss discusses".split()
)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens without stopwords (no stemming: simple and language-neutral)."""
    return [token for token in _TOKEN.findall(text.lower()) if token not in STOPWORDS]


@dataclass(frozen=True)
class Bm25Collection:
    """Document frequencies and lengths of a collection, for BM25 of any query against it."""

    document_frequency: dict[str, int]
    lengths: dict[str, int]
    term_counts: dict[str, Counter[str]]

    @classmethod
    def of(cls, documents: dict[str, str]) -> Bm25Collection:
        counts = {docno: Counter(tokens(text)) for docno, text in documents.items()}
        frequency: Counter[str] = Counter()
        for terms in counts.values():
            frequency.update(terms.keys())
        return cls(dict(frequency), {d: sum(c.values()) for d, c in counts.items()}, counts)

    @property
    def average_length(self) -> float:
        return sum(self.lengths.values()) / len(self.lengths) if self.lengths else 0.0

    def scores(self, query: str, docnos: Sequence[str]) -> np.ndarray:
        """BM25 of the query against each listed document (0 for a docno not in the collection)."""
        n_docs = len(self.lengths)
        average = self.average_length or 1.0
        query_terms = Counter(tokens(query))
        result = np.zeros(len(docnos))
        for index, docno in enumerate(docnos):
            counts = self.term_counts.get(docno)
            if not counts:
                continue
            norm = K1 * (1 - B + B * self.lengths[docno] / average)
            total = 0.0
            for term, query_count in query_terms.items():
                tf = counts.get(term, 0)
                if not tf:
                    continue
                df = self.document_frequency[term]
                idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
                total += query_count * idf * tf * (K1 + 1) / (tf + norm)
            result[index] = total
        return result


def normalised(scores: np.ndarray) -> np.ndarray:
    """Scores of one topic divided by its highest (all zeros stay zeros)."""
    top = float(scores.max()) if scores.size else 0.0
    return scores / top if top > 0 else np.zeros_like(scores)


def default_shares(n_grades: int) -> np.ndarray:
    """The default share of each grade: half the pool non-relevant, each higher grade half the
    share of the one below (4 grades: 0.5, 0.25, 0.125, 0.125)."""
    shares = np.array([0.5**grade for grade in range(1, n_grades + 1)])
    shares[-1] = 1.0 - shares[:-1].sum()
    return shares


@dataclass(frozen=True)
class Thresholds:
    """Cut points on the normalised score: grade g for cuts[g - 1] <= score < cuts[g]."""

    cuts: tuple[float, ...]
    source: str
    """"human labels (n)" or "default shares"."""

    def classes(self, scores: np.ndarray) -> np.ndarray:
        return np.searchsorted(np.asarray(self.cuts), scores, side="right").astype(np.int64)

    def as_dict(self) -> dict[str, object]:
        return {"cuts": list(self.cuts), "source": self.source}


def fit_thresholds(
    pool_scores: np.ndarray, labelled_scores: np.ndarray, labelled_grades: np.ndarray, *, n_grades: int
) -> Thresholds:
    """Cuts that give the labelled items the grade proportions the humans gave them (quantile
    matching: monotone, needs no optimiser, cannot overfit more than the proportions); with fewer
    than `MIN_HUMAN_LABELS` labels or a single grade, cuts that give the pool `default_shares`."""
    grades = np.asarray(labelled_grades, dtype=np.int64)
    if grades.size >= MIN_HUMAN_LABELS and np.unique(grades).size >= 2:
        shares = np.bincount(np.clip(grades, 0, n_grades - 1), minlength=n_grades) / grades.size
        reference, source = np.asarray(labelled_scores, dtype=float), f"human labels ({grades.size})"
    else:
        shares, reference, source = (
            default_shares(n_grades),
            np.asarray(pool_scores, dtype=float),
            "default shares",
        )
    if not reference.size:
        return Thresholds(tuple(float("inf") for _ in range(n_grades - 1)), source)
    cumulative = np.cumsum(shares)[:-1]
    cuts = np.quantile(reference, np.clip(cumulative, 0.0, 1.0), method="higher")
    # A grade no human gave keeps an empty band (cut = the next one), never a reversed one.
    cuts = np.maximum.accumulate(np.where(cumulative >= 1.0, np.inf, cuts))
    # A cut at 0 would put every unmatched document above grade 0.
    cuts = np.where(cuts <= 0, np.nextafter(0.0, 1.0), cuts)
    return Thresholds(tuple(float(cut) for cut in cuts), source)


def lexical_query(title: str, description: str) -> str:
    """What the lexical judge searches for: the topic's title and description."""
    return f"{title} {description}"


def pool_scores(
    collection: Bm25Collection, queries: Mapping[str, str], pool: Mapping[str, Sequence[str]]
) -> dict[str, np.ndarray]:
    """qid -> the normalised BM25 score of each pooled document of the topic, in pool order."""
    return {qid: normalised(collection.scores(queries.get(qid, ""), docnos)) for qid, docnos in pool.items()}


def rationale(score: float, thresholds: Thresholds) -> str:
    """What a lexical label says about itself (shown and exported as the label's rationale)."""
    cuts = ", ".join(f"{cut:.2f}" for cut in thresholds.cuts)
    return f"BM25 {score:.2f} of the topic's best; thresholds {cuts} ({thresholds.source})"
