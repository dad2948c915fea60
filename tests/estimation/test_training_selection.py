"""Training-data selection: budgets, caps, never a labeled row, seeds, and the drawn variant."""

from __future__ import annotations

import numpy as np
import pytest

from estimation.formats.letor import LetorPool
from estimation.sampling.estimators import query_level_estimate
from estimation.sampling.inclusion import horvitz_thompson_total, inclusion_probabilities, mixture_weights
from estimation.training.elo_dcg import discounts
from estimation.training.selection import (
    DRAWABLE_RULES,
    SELECTION_RULES,
    pool_expected_loss,
    select_training,
)

N_MEMBERS, MAX_GRADE = 4, 4


def synthetic_pool(
    seed: int = 0, n_queries: int = 25, labeled_share: float = 0.2
) -> tuple[LetorPool, np.ndarray]:
    """Queries of 3-40 documents, true grades 0-4, members = truth + member noise."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 41, n_queries)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    truth = rng.choice(5, offsets[-1], p=[0.5, 0.25, 0.13, 0.08, 0.04])
    grades = np.where(rng.random(offsets[-1]) < labeled_share, truth, -1)
    pool = LetorPool(
        features=np.zeros((offsets[-1], 0), dtype=np.float32),
        grades=grades,
        query_ids=tuple(f"q{q}" for q in range(n_queries)),
        query_offsets=offsets,
        doc_ids=tuple(f"d{r}" for r in range(offsets[-1])),
    )
    noise = rng.normal(0, 1.0, (offsets[-1], N_MEMBERS)) * rng.uniform(0.2, 1.5, (offsets[-1], 1))
    return pool, truth[:, None] + noise


def selections(pool: LetorPool, scores: np.ndarray, budget: int, seed: int = 0):
    for strategy in SELECTION_RULES:
        yield select_training(pool, scores, strategy=strategy, budget=budget, max_grade=MAX_GRADE, seed=seed)
    for strategy in DRAWABLE_RULES:
        yield select_training(
            pool, scores, strategy=strategy, budget=budget, max_grade=MAX_GRADE, seed=seed, draw=True
        )


@pytest.mark.parametrize("budget", [0, 1, 7, 40, 333, 10_000])
def test_it_spends_exactly_the_budget_on_distinct_unlabeled_rows(budget: int) -> None:
    pool, scores = synthetic_pool()
    unlabeled = int((~pool.labeled).sum())
    per_query_reach = np.minimum(
        np.bincount(pool.query_of_row()[~pool.labeled], minlength=pool.n_queries), 15
    )
    for selection in selections(pool, scores, budget):
        reachable = (
            per_query_reach.sum() if selection.strategy in ("elo_qd", "random_qd", "top_k") else unlabeled
        )
        if selection.draw and selection.strategy != "elo_d":
            # Two-stage draws spend at most the budget (any drawn queries must fit it).
            assert 0 < len(selection) <= min(budget, reachable) or budget == 0, selection.strategy
        else:
            assert len(selection) == min(budget, reachable), selection.strategy
        assert np.unique(selection.rows).size == len(selection)
        assert not pool.labeled[selection.rows].any()
        assert len(selection.items) == len(selection)


@pytest.mark.parametrize("cap", [1, 4, 15])
def test_it_never_takes_more_than_the_cap_per_query(cap: int) -> None:
    pool, scores = synthetic_pool(1)
    per_query = np.bincount(pool.query_of_row()[~pool.labeled], minlength=pool.n_queries)
    reach = int(np.minimum(per_query, cap).sum())
    for strategy, draw in [("elo_qd", False), ("elo_qd", True), ("random_qd", False), ("top_k", False)]:
        selection = select_training(
            pool, scores, strategy=strategy, budget=120, docs_per_query=cap, max_grade=MAX_GRADE, draw=draw
        )
        counts = np.bincount(pool.query_of_row()[selection.rows])
        assert counts.max() <= cap, (strategy, draw)
        assert len(selection) <= min(120, reach) if draw else len(selection) == min(120, reach)


def test_it_follows_the_expected_loss_deterministically() -> None:
    pool, scores = synthetic_pool(2)
    loss = pool_expected_loss(pool, scores, max_grade=MAX_GRADE)
    query = pool.query_of_row()
    two_stage = select_training(pool, scores, strategy="elo_qd", budget=45, max_grade=MAX_GRADE)
    # Queries in order of EL(q), each query's items contiguous and by EL(j) descending.
    picked = list(dict.fromkeys(query[two_stage.rows].tolist()))
    candidates = [q for q in np.argsort(-loss.query, kind="stable") if (~pool.labeled[query == q]).any()]
    assert picked == candidates[: len(picked)]
    for q in picked:
        el = loss.document[two_stage.rows[query[two_stage.rows] == q]]
        assert np.all(np.diff(el) <= 0)
    documents = select_training(pool, scores, strategy="elo_d", budget=30, max_grade=MAX_GRADE)
    unlabeled = np.flatnonzero(~pool.labeled)
    assert documents.el_doc.min() >= np.sort(loss.document[unlabeled])[-30]
    assert documents.inclusion_probability is None and two_stage.inclusion_probability is None
    variance = select_training(pool, scores, strategy="variance", budget=10, max_grade=MAX_GRADE)
    assert scores[variance.rows].var(axis=1).min() >= np.sort(scores[unlabeled].var(axis=1))[-10]


def test_it_gives_labeled_rows_no_uncertainty() -> None:
    pool, scores = synthetic_pool(3, labeled_share=0.5)
    loss = pool_expected_loss(pool, scores, max_grade=MAX_GRADE)
    assert np.all(loss.document[pool.labeled] == 0)


def test_it_repeats_itself_for_a_seed() -> None:
    pool, scores = synthetic_pool(4)
    for first, again, other in zip(
        selections(pool, scores, 60, seed=5),
        selections(pool, scores, 60, seed=5),
        selections(pool, scores, 60, seed=6),
        strict=True,
    ):
        assert first.items == again.items
        if first.inclusion_probability is not None:
            np.testing.assert_array_equal(first.inclusion_probability, again.inclusion_probability)
        if first.strategy.startswith("random") or first.draw:
            assert first.items != other.items


def test_it_needs_scores_except_for_random_strategies() -> None:
    pool, _ = synthetic_pool()
    selection = select_training(pool, None, strategy="random_q", budget=10, max_grade=MAX_GRADE)
    assert len(selection) == 10 and np.isnan(selection.el_doc).all()
    with pytest.raises(ValueError, match="needs the ensemble"):
        select_training(pool, None, strategy="top_k", budget=10, max_grade=MAX_GRADE)
    with pytest.raises(ValueError, match="draw applies"):
        select_training(pool, None, strategy="random_d", budget=10, max_grade=MAX_GRADE, draw=True)
    with pytest.raises(ValueError, match="unknown strategy"):
        select_training(pool, None, strategy="best", budget=10)


# --- The drawn variant. -----------------------------------------------------------------------


def test_it_computes_inclusion_probabilities_that_sum_to_the_size() -> None:
    weights = mixture_weights(np.array([0.0, 0.0, 5.0, 1.0, 0.5, 30.0]), 0.1)
    pi = inclusion_probabilities(weights, 3)
    assert pi.sum() == pytest.approx(3) and np.all(pi > 0) and np.all(pi <= 1)
    assert pi[5] == 1.0  # the heavy unit is taken for sure
    np.testing.assert_allclose(inclusion_probabilities(np.ones(4), 4), 1.0)


def test_drawn_items_carry_probabilities_in_zero_one() -> None:
    pool, scores = synthetic_pool(5)
    for strategy in DRAWABLE_RULES:
        selection = select_training(
            pool, scores, strategy=strategy, budget=80, max_grade=MAX_GRADE, draw=True
        )
        pi = selection.inclusion_probability
        assert pi is not None
        assert np.all(pi > 0) and np.all(pi <= 1)
        if strategy != "elo_d":
            query_pi = selection.query_inclusion_probability
            document_pi = selection.document_inclusion_probability_given_query
            assert query_pi is not None and document_pi is not None
            np.testing.assert_allclose(pi, query_pi * document_pi, rtol=1e-12)
            assert np.all(document_pi > 0) and np.all(document_pi <= 1)


@pytest.mark.parametrize("strategy", DRAWABLE_RULES)
def test_drawn_labels_give_an_unbiased_dcg_estimate(strategy: str) -> None:
    # A ranker's DCG@10 summed over the pool's queries is a sum of per-document terms
    # G(y) d(rank); its Horvitz-Thompson estimate from the drawn labels must be unbiased.
    pool, scores = synthetic_pool(6, labeled_share=0.0)
    rng = np.random.default_rng(8)
    truth_grades = np.clip(np.round(scores.mean(axis=1) + rng.normal(0, 1, pool.n_docs)), 0, 4)
    ranker = truth_grades + rng.normal(0, 1.5, pool.n_docs)
    term = np.zeros(pool.n_docs)
    for a, b in zip(pool.query_offsets[:-1], pool.query_offsets[1:], strict=True):
        order = np.argsort(-ranker[a:b], kind="stable")
        term[a + order] = (2.0 ** truth_grades[a + order] - 1) * discounts(b - a, 10)
    truth = term.sum()
    loss = pool_expected_loss(pool, scores, max_grade=MAX_GRADE)
    estimates = []
    for seed in range(200):
        selection = select_training(
            pool, scores, strategy=strategy, budget=60, max_grade=MAX_GRADE, seed=seed, draw=True, loss=loss
        )
        assert selection.inclusion_probability is not None
        estimates.append(horvitz_thompson_total(term[selection.rows], selection.inclusion_probability))
    mean, se = np.mean(estimates), np.std(estimates, ddof=1) / np.sqrt(len(estimates))
    assert abs(mean - truth) < 3 * se, (mean, truth, se)


def test_the_existing_query_level_estimator_gives_the_same_total() -> None:
    pool, scores = synthetic_pool(9, labeled_share=0.0)
    selection = select_training(pool, scores, strategy="elo_d", budget=50, max_grade=MAX_GRADE, draw=True)
    values = np.random.default_rng(0).random(len(selection))
    pi = selection.inclusion_probability
    assert pi is not None
    estimate = query_level_estimate(
        values, pi / len(selection), np.ones(len(selection)), self_normalised=False
    )
    assert estimate.value == pytest.approx(horvitz_thompson_total(values, pi))
    assert selection.total_estimate(values).total == pytest.approx(estimate.value)


# --- The drawn two-stage design: marginal probabilities, unbiasedness, coverage. -----------------


def small_two_stage_pool() -> tuple[LetorPool, np.ndarray]:
    """Eight unlabeled queries of 3-8 documents: small enough for thousands of draws."""
    return synthetic_pool(11, n_queries=8, labeled_share=0.0)


def test_two_stage_draws_hit_each_item_with_its_reported_probability() -> None:
    pool, scores = small_two_stage_pool()
    loss = pool_expected_loss(pool, scores, max_grade=MAX_GRADE)
    draws = 1500
    hits = np.zeros(pool.n_docs)
    reported = np.full(pool.n_docs, np.nan)
    for seed in range(draws):
        selection = select_training(
            pool,
            scores,
            strategy="elo_qd",
            budget=9,
            docs_per_query=3,
            max_grade=MAX_GRADE,
            seed=seed,
            draw=True,
            loss=loss,
        )
        assert selection.inclusion_probability is not None and len(selection) <= 9
        hits[selection.rows] += 1
        # The design does not depend on the draw: an item reports the same probability each time.
        seen = ~np.isnan(reported[selection.rows])
        np.testing.assert_allclose(reported[selection.rows][seen], selection.inclusion_probability[seen])
        reported[selection.rows] = selection.inclusion_probability
    reached = ~np.isnan(reported)
    assert reached.sum() > 0.8 * pool.n_docs
    frequency, pi = hits[reached] / draws, reported[reached]
    # 4.5 binomial standard errors per item (a false alarm about once in 30,000 items).
    assert np.all(np.abs(frequency - pi) <= 4.5 * np.sqrt(pi * (1 - pi) / draws) + 1e-12)


def test_drawn_two_stage_totals_and_their_variance_estimates_are_unbiased() -> None:
    # The single-stage design (elo_d) is checked in test_conditional_poisson.py, coverage too.
    pool, scores = small_two_stage_pool()
    loss = pool_expected_loss(pool, scores, max_grade=MAX_GRADE)
    values = 1.0 + np.random.default_rng(12).gamma(2.0, 1.0, pool.n_docs)  # e.g. a DCG term
    truth = values.sum()
    totals, variances = [], []
    draws = 500
    for seed in range(draws):
        selection = select_training(
            pool,
            scores,
            strategy="elo_qd",
            budget=16,
            docs_per_query=4,
            max_grade=MAX_GRADE,
            seed=seed,
            draw=True,
            loss=loss,
        )
        estimate = selection.total_estimate(values[selection.rows])
        totals.append(estimate.total)
        variances.append(estimate.variance)
    mean, standard_error = np.mean(totals), np.std(totals, ddof=1) / np.sqrt(draws)
    assert abs(mean - truth) < 3 * standard_error, (mean, truth, standard_error)
    # E[variance estimate] = the design variance, here estimated by the totals' spread; both
    # carry sampling error (about 10 % relative at 500 draws of these skewed totals).
    assert np.mean(variances) == pytest.approx(np.var(totals, ddof=1), rel=0.25)
