"""Learned DCG gains and discounts from side-by-side preferences (DCGLearn).

Zhou, Zha, Chang and Xue, *Learning the gain values and discount factors of DCG*, IEEE TKDE
26(2), 2014. Grades ``y`` run ``0..L-1``, higher is better (the paper numbers its labels the
other way round). A top-K list is the one-hot encoding ``s`` of its grades per position
(§4.2); a utility ``u = wᵀs = Σ_k W[k, y_k]`` generalises DCG (``W = c ⊗ g``). From pairs of
lists with a preference, DCGLearn fits ``W`` as a RankSVM with squared slacks, margin 1 and
gains monotone per position (§4.3 eqs. 1-3; ties eqs. 6-8), then reads gains and discounts
from the rank-1 part of ``T(W) = W - W[:, :1]`` (§4.3, eq. 4).

Identifiability: adding a constant to a row of ``W`` changes no comparison, hence ``T(W)``;
if every pair holds the same multiset of grades on both sides, discounts are known only up
to a shift. Pairs with identical encodings carry no information and are dropped.

``fit_weights`` solves the paper's QP (Clarabel). ``learn_dcg`` chooses C by cross-validation
over topics, refits on everything, and adds bootstrap intervals over topics and a learning
curve; its ~160 fits solve the same problem in a bound-only form by a projected Newton
method (``estimation.learned_dcg.solvers``), warm-started, 30-50x faster than the QP; the tests
check it against the QP (same objective to 1e-6 relative, same ``T(W)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from estimation.learned_dcg.lists import (
    EMPTY,
    PreferenceData,
    RankOne,
    _correct,
    _scored_rows,
    encode_lists,
    preference_accuracy,
    rank_one,
    simple_margin,
    standard_weights,
    transformed_weights,
    utilities,
)
from estimation.learned_dcg.solvers import Design, merge_pairs, solve_newton, solve_qp

__all__ = [
    "EMPTY",
    "LearnedDCG",
    "PreferenceData",
    "RankOne",
    "encode_lists",
    "fit_weights",
    "learn_dcg",
    "preference_accuracy",
    "rank_one",
    "simple_margin",
    "standard_weights",
    "transformed_weights",
    "utilities",
]

MIN_STRICT_PAIRS = 10
"""`learn_dcg` needs at least this many informative (non-tied, non-identical) answers..."""
MIN_TOPICS = 2
"""...spread over at least this many topics (cross-validation never splits a topic)."""


@dataclass(frozen=True)
class _Pairs:
    """The informative answers of a `PreferenceData` as solver rows."""

    design: Design
    answer: np.ndarray  # index of the answer behind each informative pair
    is_tie: np.ndarray
    n_identical: int


def _informative_pairs(
    data: PreferenceData, n_grades: int, *, ties: bool, much_better_margin: float
) -> _Pairs:
    if much_better_margin < 1.0 or not np.isfinite(much_better_margin):
        raise ValueError(f"much_better_margin must be a finite number >= 1, got {much_better_margin}")
    s_left = encode_lists(data.left, n_grades)
    s_right = encode_lists(data.right, n_grades)
    identical = data.identical()
    strict = (data.preference != 0) & ~identical
    tied = (data.preference == 0) & ~identical if ties else np.zeros(len(data), dtype=bool)
    answer = np.flatnonzero(strict | tied)
    # Orient strict pairs from the preferred list: wᵀd >= margin.
    sign = np.where(data.preference[answer] > 0, -1.0, 1.0)
    d = (s_left[answer] - s_right[answer]) * sign[:, None]
    is_tie = tied[answer]
    margin = np.where(np.abs(data.preference[answer]) == 2, much_better_margin, 1.0)
    design = merge_pairs(d, margin, is_tie, (data.cutoff, n_grades))
    return _Pairs(design, answer, is_tie, int(identical.sum()))


def _check_costs(c_strict: float, c_tie: float | None) -> tuple[float, float]:
    c_tie = c_strict if c_tie is None else c_tie
    for name, value in (("c_strict", c_strict), ("c_tie", c_tie)):
        if not np.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return float(c_strict), float(c_tie)


def fit_weights(
    data: PreferenceData,
    n_grades: int,
    *,
    c_strict: float,
    c_tie: float | None = None,
    ties: bool = True,
    monotone_discounts: bool = False,
    much_better_margin: float = 1.0,
) -> np.ndarray:
    """Fit the DCGLearn utility weights by the paper's QP (Clarabel).

    Minimises ``wᵀw + C_s Σ_S ξ² + C_t Σ_T ξ²`` subject to ``wᵀd ≥ 1 - ξ`` for each strict
    pair (d from the preferred list), ``-1 - ξ ≤ wᵀd ≤ 1 + ξ`` for each tie, ``ξ ≥ 0`` and
    ``W[k, l+1] ≥ W[k, l]`` (Zhou et al. 2014, eqs. 1-3 and 6-8).

    Parameters
    ----------
    data : PreferenceData
    n_grades : int
        L; grades in the data must lie in ``0..L-1`` (or -1 for an empty position).
    c_strict, c_tie : float
        Slack costs C_s and C_t (C_t defaults to C_s).
    ties : bool
        Use "about the same" answers as two-sided constraints; otherwise drop them.
    monotone_discounts : bool
        Also require ``T(W)[k, l] ≥ T(W)[k+1, l]`` (non-increasing discounts; not in the paper).
    much_better_margin : float
        Margin for ±2 answers (1, the default, ignores the magnitude as the paper does).

    Returns
    -------
    ndarray, shape (K, L)
        W. Answers whose lists have identical encodings are ignored.

    Raises
    ------
    ValueError
        Bad data, grades outside ``-1..L-1``, or no strict informative pair (the margin of a
        strict pair is what fixes the scale of W).
    """
    c_strict, c_tie = _check_costs(c_strict, c_tie)
    pairs = _informative_pairs(data, n_grades, ties=ties, much_better_margin=much_better_margin)
    if not np.any(~pairs.is_tie):
        raise ValueError(
            "no informative strict preference (left or right better, lists not identical) to fit"
        )
    weights = pairs.design.row_weights(np.ones(pairs.answer.size))
    w = solve_qp(pairs.design, weights, c_strict, c_tie, monotone_discounts=monotone_discounts)
    return w.reshape(data.cutoff, n_grades)


# ---------------------------------------------------------------------------------------------
# The full procedure


@dataclass(frozen=True)
class LearnedDCG:
    """Result of `learn_dcg`: W, its DCG form with bootstrap intervals, and accuracies.

    ``gains`` / ``discounts`` / ``sigma_ratio`` come from `rank_one` of ``transformed``
    (``T(W)``); the ``_low`` / ``_high`` fields are 95 % percentile bootstrap intervals over
    topics. ``accuracy`` holds held-out accuracies over cross-validation folds by topic
    ("learned" at the chosen C, "exp" and "linear" the standard DCG@K on the same answers);
    ``accuracy_curve`` the same at growing numbers of training answers. ``pairs`` counts the
    strict informative answers used, ``ties`` the tied ones, ``dropped_identical`` answers
    whose two lists were identical, ``groups`` the topics with an informative answer.
    """

    weights: np.ndarray
    transformed: np.ndarray
    gains: np.ndarray
    discounts: np.ndarray
    sigma_ratio: float
    c: float
    gains_low: np.ndarray
    gains_high: np.ndarray
    discounts_low: np.ndarray
    discounts_high: np.ndarray
    sigma_ratio_low: float
    sigma_ratio_high: float
    accuracy: dict[str, float]
    accuracy_curve: list[dict] = field(default_factory=list)
    pairs: int = 0
    ties: int = 0
    dropped_identical: int = 0
    groups: int = 0
    cutoff: int = 0
    n_grades: int = 0

    def to_json(self) -> dict:
        """Plain floats, ints and lists (JSON-serialisable)."""

        def plain(value: object) -> object:
            if isinstance(value, np.ndarray):
                return value.tolist()
            if isinstance(value, np.generic):
                return value.item()
            if isinstance(value, dict):
                return {key: plain(item) for key, item in value.items()}
            if isinstance(value, list):
                return [plain(item) for item in value]
            return value

        return {name: plain(getattr(self, name)) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class _Folds:
    """Topics with an informative answer, their folds, and the scored (directional) answers."""

    topic_of_pair: np.ndarray  # topic index of each informative pair
    topic_of_answer: np.ndarray  # topic index of each answer, -1 for topics without pairs
    fold_of_topic: np.ndarray
    scored: np.ndarray  # answers with a direction and distinct lists
    scored_d: np.ndarray  # s_left - s_right of the scored answers
    wanted: np.ndarray  # -1: left better, +1: right better


def _make_folds(
    data: PreferenceData, pairs: _Pairs, n_grades: int, folds: int, rng: np.random.Generator
) -> _Folds:
    topic_values, topic_of_answer = np.unique(data.groups, return_inverse=True)
    topic_of_answer = topic_of_answer.reshape(-1)
    n_pairs_strict = int(np.sum(~pairs.is_tie))
    n_topics_strict = np.unique(topic_of_answer[pairs.answer[~pairs.is_tie]]).size
    if n_pairs_strict < MIN_STRICT_PAIRS or n_topics_strict < MIN_TOPICS:
        raise ValueError(
            f"learning DCG needs at least {MIN_STRICT_PAIRS} informative answers (one list better, "
            f"lists not identical) over at least {MIN_TOPICS} topics; got {n_pairs_strict} over "
            f"{n_topics_strict} topic(s)"
        )
    # Every topic with an informative answer (strict or tied) goes to a fold.
    used = np.unique(topic_of_answer[pairs.answer])
    index = np.full(topic_values.size, -1)
    index[used] = np.arange(used.size)
    n_folds = min(folds, used.size)
    fold_of_topic = np.empty(used.size, dtype=np.int64)
    fold_of_topic[rng.permutation(used.size)] = np.arange(used.size) % n_folds
    topic_of_answer = index[topic_of_answer]
    scored = _scored_rows(data)
    scored = scored[topic_of_answer[scored] >= 0]
    scored_d = encode_lists(data.left[scored], n_grades) - encode_lists(data.right[scored], n_grades)
    return _Folds(
        topic_of_pair=topic_of_answer[pairs.answer],
        topic_of_answer=topic_of_answer,
        fold_of_topic=fold_of_topic,
        scored=scored,
        scored_d=scored_d,
        wanted=np.sign(data.preference[scored]).astype(float),
    )


def _curve_sizes(n_train: int) -> list[int]:
    sizes = [50 * 2**j for j in range(20) if 50 * 2**j < n_train]
    return [*sizes, n_train]


def learn_dcg(
    data: PreferenceData,
    n_grades: int,
    *,
    c_grid: tuple[float, ...] = (0.1, 1.0, 10.0, 100.0),
    folds: int = 5,
    ties: bool = True,
    monotone_discounts: bool = False,
    bootstrap: int = 100,
    seed: int = 0,
    curve: bool = True,
) -> LearnedDCG:
    """Learn DCG gains and discounts from side-by-side answers, with intervals and accuracies.

    1. C (``C_s = C_t``) by ``folds``-fold cross-validation over topics (a topic's answers
       stay in one fold), maximising held-out accuracy;
    2. W on every answer at that C, then `rank_one` of ``T(W)``;
    3. ``bootstrap`` replicates resampling topics with replacement: 95 % percentile intervals
       for gains, discounts and ``σ₂/σ₁`` (replicates whose ``T(W)`` has no DCG form are
       skipped);
    4. the learning curve: held-out accuracy when each fold trains on a random subset of
       50, 100, 200, ... of its training answers.

    The reported learned accuracy is the cross-validated one at the chosen C, hence slightly
    optimistic (the best of ``len(c_grid)``); the standard DCGs need no fitting and are scored
    on the same answers. Every fit uses the projected Newton solver of the same problem as
    `fit_weights`' QP (objectives agree to ~1e-12 relative; the QP alone takes longer than the
    whole procedure on 5,000 answers), or the QP when ``monotone_discounts`` (slower).
    Deterministic for a seed.

    Raises
    ------
    ValueError
        Bad arguments, or fewer than `MIN_STRICT_PAIRS` informative answers or fewer than
        `MIN_TOPICS` topics holding them.
    """
    if folds < 2:
        raise ValueError(f"folds must be >= 2, got {folds}")
    if bootstrap < 0:
        raise ValueError(f"bootstrap must be >= 0, got {bootstrap}")
    grid = sorted(float(c) for c in c_grid)
    if not grid or any(not np.isfinite(c) or c <= 0 for c in grid):
        raise ValueError(f"c_grid must hold finite numbers > 0, got {c_grid!r}")
    rng = np.random.default_rng(seed)
    pairs = _informative_pairs(data, n_grades, ties=ties, much_better_margin=1.0)
    split = _make_folds(data, pairs, n_grades, folds, rng)
    design, n_topics = pairs.design, split.fold_of_topic.size

    def refit(pair_weights: np.ndarray, c: float, start: np.ndarray | None) -> np.ndarray:
        row_weights = design.row_weights(pair_weights)
        if monotone_discounts:
            return solve_qp(design, row_weights, c, c, monotone_discounts=True)
        return solve_newton(design, row_weights, c, c, start=start)

    fold_of_scored = split.fold_of_topic[split.topic_of_answer[split.scored]]
    n_folds = int(split.fold_of_topic.max()) + 1
    correct = np.zeros((len(grid), split.scored.size))
    for fold in range(n_folds):
        train = (split.fold_of_topic[split.topic_of_pair] != fold).astype(float)
        held_out = fold_of_scored == fold
        start = None
        for position, c in enumerate(grid):
            start = refit(train, c, start)
            correct[position, held_out] = _correct(start, split.scored_d[held_out], split.wanted[held_out])
    cv_accuracy = correct.mean(axis=1)
    best = int(np.argmax(cv_accuracy))
    chosen_c = grid[best]

    standard = {gain: standard_weights(data.cutoff, n_grades, gain).reshape(-1) for gain in ("exp", "linear")}
    accuracy = {"learned": float(cv_accuracy[best])}
    for gain, w in standard.items():
        accuracy[gain] = float(_correct(w, split.scored_d, split.wanted).mean())

    w_final = refit(np.ones(pairs.answer.size), chosen_c, None)
    table = w_final.reshape(data.cutoff, n_grades)
    transformed = transformed_weights(table)
    form = rank_one(transformed)

    replicates: list[RankOne] = []
    for _ in range(bootstrap):
        counts = np.bincount(rng.integers(0, n_topics, n_topics), minlength=n_topics).astype(float)
        replicate = refit(counts[split.topic_of_pair], chosen_c, w_final).reshape(data.cutoff, n_grades)
        try:
            replicates.append(rank_one(transformed_weights(replicate)))
        except ValueError:
            continue
    intervals = _percentile_intervals(replicates, form)

    accuracy_curve = (
        _learning_curve(
            data, split, pairs.answer, refit, chosen_c, {g: accuracy[g] for g in ("exp", "linear")}, rng
        )
        if curve
        else []
    )
    return LearnedDCG(
        weights=table,
        transformed=transformed,
        gains=form.gains,
        discounts=form.discounts,
        sigma_ratio=form.sigma_ratio,
        c=chosen_c,
        **intervals,
        accuracy=accuracy,
        accuracy_curve=accuracy_curve,
        pairs=int(np.sum(~pairs.is_tie)),
        ties=int(np.sum(pairs.is_tie)),
        dropped_identical=pairs.n_identical,
        groups=n_topics,
        cutoff=data.cutoff,
        n_grades=n_grades,
    )


def _percentile_intervals(replicates: list[RankOne], form: RankOne) -> dict:
    if not replicates:
        nan_g, nan_c = np.full_like(form.gains, np.nan), np.full_like(form.discounts, np.nan)
        return dict(
            gains_low=nan_g, gains_high=nan_g, discounts_low=nan_c, discounts_high=nan_c,
            sigma_ratio_low=float("nan"), sigma_ratio_high=float("nan"),
        )  # fmt: skip
    gains = np.array([r.gains for r in replicates])
    discounts = np.array([r.discounts for r in replicates])
    ratios = np.array([r.sigma_ratio for r in replicates])
    return dict(
        gains_low=np.percentile(gains, 2.5, axis=0),
        gains_high=np.percentile(gains, 97.5, axis=0),
        discounts_low=np.percentile(discounts, 2.5, axis=0),
        discounts_high=np.percentile(discounts, 97.5, axis=0),
        sigma_ratio_low=float(np.percentile(ratios, 2.5)),
        sigma_ratio_high=float(np.percentile(ratios, 97.5)),
    )


def _learning_curve(
    data: PreferenceData,
    split: _Folds,
    pair_answer: np.ndarray,
    refit: Callable[[np.ndarray, float, np.ndarray | None], np.ndarray],
    c: float,
    standard: dict[str, float],
    rng: np.random.Generator,
) -> list[dict]:
    """Held-out accuracy when each fold trains on a random subset of its training answers."""
    answers = np.flatnonzero(split.topic_of_answer >= 0)
    fold_of_answer = split.fold_of_topic[split.topic_of_answer[answers]]
    fold_of_scored = split.fold_of_topic[split.topic_of_answer[split.scored]]
    n_folds = int(split.fold_of_topic.max()) + 1
    n_train = min(int(np.sum(fold_of_answer != fold)) for fold in range(n_folds))
    rows = []
    for size in _curve_sizes(n_train):
        correct = np.zeros(split.scored.size)
        for fold in range(n_folds):
            chosen = np.zeros(len(data), dtype=bool)
            chosen[rng.choice(answers[fold_of_answer != fold], size=size, replace=False)] = True
            held_out = fold_of_scored == fold
            w = refit(chosen[pair_answer].astype(float), c, None)
            correct[held_out] = _correct(w, split.scored_d[held_out], split.wanted[held_out])
        # The standard DCGs need no training: the same held-out answers at every size.
        rows.append({"answers": size, "learned": float(correct.mean())} | standard)
    return rows
