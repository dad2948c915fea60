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

``fit_weights`` solves the paper's QP (Clarabel). ``learn_dcg`` is the whole procedure with
either fit (`estimation.learned_dcg.fitters`): the ordered-probit likelihood of the five
answers (the default, `estimation.learned_dcg.likelihood`) or the paper's QP (its many refits
by a projected Newton method on an equivalent bound-only form, `estimation.learned_dcg.
solvers`, checked against the QP to 1e-6). C (and the QP's C_t) by cross-validation over
topics, the grid extended once at an edge; W on everything; a bootstrap over topics that
repeats the whole fit, with BCa intervals (`estimation.learned_dcg.intervals`); the
likelihood-ratio test of the DCG form; nested held-out accuracies; the measured coverage of
such intervals (`estimation.learned_dcg.coverage`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from estimation.learned_dcg.budget import TimeBudget, TimeBudgetSpent
from estimation.learned_dcg.coverage import coverage_note
from estimation.learned_dcg.fitters import (
    LIKELIHOOD,
    METHODS,
    QP,
    Fitter,
    LikelihoodFitter,
    QPFitter,
    Scored,
    informative_pairs,
    scored_answers,
    tie_answers,
)
from estimation.learned_dcg.intervals import bca_intervals
from estimation.learned_dcg.likelihood import form_test, ordinal_design
from estimation.learned_dcg.lists import (
    EMPTY,
    PreferenceData,
    RankOne,
    _correct,
    encode_lists,
    preference_accuracy,
    rank_one,
    simple_margin,
    standard_weights,
    transformed_weights,
    utilities,
)
from estimation.learned_dcg.solvers import solve_qp

_informative_pairs = informative_pairs  # the name tests and the benchmark import

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
    pairs = informative_pairs(data, n_grades, ties=ties, much_better_margin=much_better_margin)
    if not np.any(~pairs.is_tie):
        raise ValueError(
            "no informative strict preference (left or right better, lists not identical) to fit"
        )
    weights = pairs.design.row_weights(np.ones(pairs.answer.size))
    w = solve_qp(pairs.design, weights, c_strict, c_tie, monotone_discounts=monotone_discounts)
    return w.reshape(data.cutoff, n_grades)


# ---------------------------------------------------------------------------------------------
# The full procedure

DEFAULT_C_GRID = (0.1, 1.0, 10.0, 100.0)
SEPARATE = "separate"
SAME = "same"
DEFAULT_BOOTSTRAP = 100
JACKKNIFE_GROUPS = 25
"""Groups of topics left out in turn for the BCa acceleration (a fit per group)."""


@dataclass(frozen=True)
class LearnedDCG:
    """Result of `learn_dcg`: W, its DCG form with bootstrap intervals, tests and accuracies.

    ``gains`` / ``discounts`` / ``sigma_ratio`` come from `rank_one` of ``transformed``
    (``T(W)``); the ``_low`` / ``_high`` fields are 95 % BCa intervals from a bootstrap over
    topics that repeats the whole fit, C (and C_t) chosen by cross-validation in every
    replicate (``interval_method``; ``bootstrap`` replicates fitted of ``bootstrap_requested``,
    ``bootstrap_stopped`` when the time budget ended the bootstrap early); ``widened`` names the
    quantities whose interval was widened to contain the estimate; ``coverage`` what simulation
    measured of such intervals (`estimation.learned_dcg.coverage.coverage_note`). ``form_test``
    is the likelihood-ratio test of the DCG form (`estimation.learned_dcg.likelihood.FormTest.
    to_json`). ``accuracy`` holds held-out
    accuracies over cross-validation folds by topic: "learned" of the learned DCG (gains x
    discounts, what a campaign applies) with C chosen without the held-out fold (nested),
    "learned_full_w" the same of the full W, "learned_best_of_grid" the learned DCG at the C
    best on every fold (optimistic), "exp" and "linear" the standard DCG@K on the same
    answers; ``accuracy_curve`` the full W's at
    growing numbers of training answers; ``tie_curve`` the held-out share of "about the same"
    answers the fit predicts as ties, per C_t. ``grid_warnings`` says when a chosen C or C_t
    sits at the edge of its grid even after extending it once. ``pairs`` counts the strict
    informative answers used, ``ties`` the tied ones, ``dropped_identical`` answers whose two
    lists were identical, ``groups`` the topics with an informative answer.
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
    method: str = LIKELIHOOD
    c_tie: float | None = None
    c_grid: list[float] = field(default_factory=list)
    c_tie_grid: list[float] = field(default_factory=list)
    grid_warnings: list[str] = field(default_factory=list)
    grid_notes: list[str] = field(default_factory=list)
    form_test: dict = field(default_factory=dict)
    interval_method: str = ""
    bootstrap: int = 0
    bootstrap_failed: int = 0
    bootstrap_requested: int = 0
    bootstrap_stopped: bool = False
    widened: list[str] = field(default_factory=list)
    tie_curve: list[dict] = field(default_factory=list)
    options: dict = field(default_factory=dict)
    coverage: dict = field(default_factory=dict)
    heldout_differences: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    """Per answer of the data, ``u(left) - u(right)`` under the model of the fold that held its
    topic out (C chosen on the other folds): "learned_dcg" (gain x discount) and "utility"
    (full W). For honest diagnostics; not part of `to_json` (one number per answer)."""

    def to_json(self) -> dict:
        """Plain floats, ints and lists (JSON-serialisable)."""

        def plain(value: object) -> object:
            if isinstance(value, np.ndarray):
                return value.tolist()
            if isinstance(value, np.generic):
                value = value.item()
            if isinstance(value, dict):
                return {key: plain(item) for key, item in value.items()}
            if isinstance(value, list):
                return [plain(item) for item in value]
            if isinstance(value, float) and not np.isfinite(value):
                return None  # JSON has no NaN
            return value

        return {
            name: plain(getattr(self, name))
            for name in self.__dataclass_fields__
            if name != "heldout_differences"
        }


@dataclass(frozen=True)
class _Topics:
    """Topics with a used answer, their folds, and the answers accuracy is measured on."""

    of_answer: np.ndarray  # topic index per answer of the data, -1 when not used
    fold: np.ndarray  # fold per topic
    scored: Scored
    tied: Scored

    @property
    def count(self) -> int:
        return int(self.fold.size)

    @property
    def n_folds(self) -> int:
        return int(self.fold.max()) + 1

    def answer_weights(self, topic_weights: np.ndarray) -> np.ndarray:
        padded = np.append(topic_weights, 0.0)  # index -1: answers no fit uses
        return padded[self.of_answer]


def _topics(
    data: PreferenceData,
    used: np.ndarray,
    strict: np.ndarray,
    n_grades: int,
    folds: int,
    rng: np.random.Generator,
) -> _Topics:
    """Number the topics holding a used answer and deal them into folds; refuse data below the
    minimum (`MIN_STRICT_PAIRS` strict answers over `MIN_TOPICS` topics)."""
    values, inverse = np.unique(data.groups, return_inverse=True)
    inverse = inverse.reshape(-1)
    n_strict = int(strict.sum())
    n_topics_strict = np.unique(inverse[strict]).size
    if n_strict < MIN_STRICT_PAIRS or n_topics_strict < MIN_TOPICS:
        raise ValueError(
            f"learning DCG needs at least {MIN_STRICT_PAIRS} informative answers (one list better, "
            f"lists not identical) over at least {MIN_TOPICS} topics; got {n_strict} over "
            f"{n_topics_strict} topic(s)"
        )
    topics_used = np.unique(inverse[used])
    index = np.full(values.size, -1)
    index[topics_used] = np.arange(topics_used.size)
    of_answer = np.where(used, index[inverse], -1)
    n_folds = min(folds, topics_used.size)
    fold = np.empty(topics_used.size, dtype=np.int64)
    fold[rng.permutation(topics_used.size)] = np.arange(topics_used.size) % n_folds
    scored, tied = scored_answers(data, n_grades), tie_answers(data, n_grades)
    keep_scored = of_answer[scored.rows] >= 0
    keep_tied = of_answer[tied.rows] >= 0
    return _Topics(
        of_answer=of_answer,
        fold=fold,
        scored=Scored(scored.rows[keep_scored], scored.d[keep_scored], scored.wanted[keep_scored]),
        tied=Scored(tied.rows[keep_tied], tied.d[keep_tied], tied.wanted[keep_tied]),
    )


@dataclass
class _CrossValidation:
    """Held-out scores per grid point and fold; with details, per-answer correctness and tie hits."""

    grid: list[tuple[float, ...]]
    score: np.ndarray  # (points, folds)
    correct: np.ndarray | None = None  # (points, scored answers), the full W
    correct_dcg: np.ndarray | None = None  # (points, scored answers), its DCG form c ⊗ g
    tie_hit: np.ndarray | None = None  # (points, tied answers)
    models: dict | None = None  # (fold, point) -> model, warm starts for replicates


def _cross_validate(
    fitter: Fitter,
    topics: _Topics,
    topic_weights: np.ndarray,
    grid: list[tuple[float, ...]],
    *,
    details: bool,
    starts: dict | None = None,
    budget: TimeBudget | None = None,
) -> _CrossValidation:
    n_folds = topics.n_folds
    score = np.full((len(grid), n_folds), -np.inf)
    correct = np.zeros((len(grid), topics.scored.rows.size))
    correct_dcg = np.full((len(grid), topics.scored.rows.size), 0.5)
    tie_hit = np.zeros((len(grid), topics.tied.rows.size), dtype=bool)
    models: dict = {}
    fold_of_scored = topics.fold[topics.of_answer[topics.scored.rows]]
    fold_of_tied = topics.fold[topics.of_answer[topics.tied.rows]]
    for fold in range(n_folds):
        in_fold = topics.fold == fold
        train = topics.answer_weights(np.where(in_fold, 0.0, topic_weights))
        held_out = topics.answer_weights(np.where(in_fold, topic_weights, 0.0))
        if not np.any(held_out > 0):
            score[:, fold] = 0.0
            continue
        model = None
        for point, params in enumerate(grid):
            start = starts.get((fold, point)) if starts else model
            if budget is not None:
                budget.check()
            try:
                model = fitter.fit(train, params, start)
            except ValueError:
                model = None
                continue
            models[fold, point] = model
            score[point, fold] = fitter.score(model, held_out, topics.scored)
            if details:
                here = fold_of_scored == fold
                w = fitter.table(model).reshape(-1)
                correct[point, here] = _correct(w, topics.scored.d[here], topics.scored.wanted[here])
                dcg = _dcg_table(fitter.table(model)).reshape(-1)
                if np.any(dcg):  # else no DCG form: a coin (0.5)
                    correct_dcg[point, here] = _correct(
                        dcg, topics.scored.d[here], topics.scored.wanted[here]
                    )
                ties_here = fold_of_tied == fold
                tie_hit[point, ties_here] = fitter.predicts_tie(model, topics.tied.d[ties_here])
    if not details:
        return _CrossValidation(grid, score, models=models)
    return _CrossValidation(grid, score, correct, correct_dcg, tie_hit, models)


def _choose(total: np.ndarray, grid: list[tuple[float, ...]], axes: list[list[float]]) -> int:
    """The best grid point; among equally good ones the nearest the middle of every axis
    (accuracy ties are common, and an arbitrary first pick would sit at an edge)."""
    finite = np.isfinite(total)
    if not np.any(finite):
        raise ValueError("no cross-validation fit succeeded")
    best = total[finite].max()
    candidates = np.flatnonzero(finite & (total >= best - 1e-9 * (1.0 + abs(best))))

    def distance(point: int) -> float:
        return sum(
            abs(axis.index(value) - (len(axis) - 1) / 2.0)
            for axis, value in zip(axes, grid[point], strict=False)  # C_t = C: one axis
        )

    return min((int(point) for point in candidates), key=distance)


def _grid(axes: list[list[float]], same: bool) -> list[tuple[float, ...]]:
    """Grid points: ``(C,)`` for the likelihood, ``(C, C_t)`` for the QP (one axis when
    ``same``: C_t = C)."""
    if same:
        return [(c, c) for c in axes[0]]
    if len(axes) == 1:
        return [(c,) for c in axes[0]]
    return [(c, t) for c in axes[0] for t in axes[1]]


def _fitter(
    data: PreferenceData,
    n_grades: int,
    method: str,
    ties: bool,
    monotone_discounts: bool,
    much_better_margin: float,
    qp_axes: list[list[float]],
) -> tuple[Fitter, np.ndarray, list[list[float]]]:
    """The method's fitter, which answers it uses, and the axes of its grid (the likelihood has C
    only; the QP C and C_t, or C alone when C_t = C)."""
    if method == LIKELIHOOD:
        likelihood = LikelihoodFitter(data, n_grades, ties=ties, monotone_discounts=monotone_discounts)
        return likelihood, likelihood.used, qp_axes[:1]
    qp = QPFitter(
        data,
        n_grades,
        ties=ties,
        monotone_discounts=monotone_discounts,
        much_better_margin=much_better_margin,
    )
    used = np.zeros(len(data), dtype=bool)
    used[qp.answer] = True
    return qp, used, qp_axes


def _cross_validated_choice(
    fitter: Fitter,
    topics: _Topics,
    weights: np.ndarray,
    axes: list[list[float]],
    same_tie: bool,
    method: str,
    budget: TimeBudget | None,
) -> tuple[list[list[float]], list[tuple[float, ...]], _CrossValidation, int]:
    """Step 1: cross-validate every grid point and choose; a choice at an edge extends the grid
    once and chooses again. Returns the axes, the grid, its cross-validation and the choice."""
    grid = _grid(axes, same_tie)
    cv = _cross_validate(fitter, topics, weights, grid, details=True, budget=budget)
    best = _choose(cv.score.sum(axis=1), grid, axes)
    extended = _extend(axes, grid[best], method)
    if extended is not None:
        axes = extended
        grid = _grid(axes, same_tie)
        cv = _cross_validate(fitter, topics, weights, grid, details=True, budget=budget)
        best = _choose(cv.score.sum(axis=1), grid, axes)
    return axes, grid, cv, best


def _bootstrap(
    fitter: Fitter,
    topics: _Topics,
    grid: list[tuple[float, ...]],
    axes: list[list[float]],
    cv: _CrossValidation,
    final: Any,
    replicates_wanted: int,
    rng: np.random.Generator,
    budget: TimeBudget | None,
) -> tuple[list[np.ndarray], int, bool]:
    """Step 3: the whole procedure (choice of C included) on topics resampled with replacement.
    Returns the replicates' summaries, how many failed, and whether the time budget stopped it
    (the replicate under way is left out)."""
    replicates, failed = [], 0
    for _ in range(replicates_wanted):
        counts = np.bincount(rng.integers(0, topics.count, topics.count), minlength=topics.count).astype(
            float
        )
        try:
            replicate_cv = _cross_validate(
                fitter, topics, counts, grid, details=False, starts=cv.models, budget=budget
            )
            point = _choose(replicate_cv.score.sum(axis=1), grid, axes)
            model = fitter.fit(topics.answer_weights(counts), grid[point], final)
            replicates.append(_summary(rank_one(transformed_weights(fitter.table(model)))))
        except ValueError:
            failed += 1
        except TimeBudgetSpent:
            return replicates, failed, True
    return replicates, failed, False


def _jackknife(
    fitter: Fitter, topics: _Topics, chosen: tuple[float, ...], final: Any, rng: np.random.Generator
) -> list[np.ndarray]:
    """Leave-one-group-out fits at the chosen values (up to `JACKKNIFE_GROUPS` groups of topics),
    for the BCa acceleration; a group whose fit fails is left out."""
    jackknife = []
    group_of_topic = rng.permutation(topics.count) % min(JACKKNIFE_GROUPS, topics.count)
    for group in range(int(group_of_topic.max()) + 1):
        try:
            model = fitter.fit(topics.answer_weights((group_of_topic != group).astype(float)), chosen, final)
            jackknife.append(_summary(rank_one(transformed_weights(fitter.table(model)))))
        except ValueError:
            continue
    return jackknife


def _accuracies(
    cv: _CrossValidation,
    topics: _Topics,
    grid: list[tuple[float, ...]],
    best: int,
    cutoff: int,
    n_grades: int,
) -> dict[str, float]:
    """Held-out accuracies: the learned weights nested (the C of the other folds) and at the best
    point of the grid (optimistic), and the standard DCGs'."""
    correct_dcg = cv.correct_dcg if cv.correct_dcg is not None else np.zeros((len(grid), 0))
    accuracy = {
        "learned": _nested_accuracy(cv, cv.correct_dcg, topics),
        "learned_full_w": _nested_accuracy(cv, cv.correct, topics),
        "learned_best_of_grid": float(correct_dcg[best].mean()) if correct_dcg.shape[1] else float("nan"),
    }
    for gain in ("exp", "linear"):
        w = standard_weights(cutoff, n_grades, gain).reshape(-1)
        accuracy[gain] = float(_correct(w, topics.scored.d, topics.scored.wanted).mean())
    return accuracy


def learn_dcg(
    data: PreferenceData,
    n_grades: int,
    *,
    method: str = LIKELIHOOD,
    c_grid: tuple[float, ...] = DEFAULT_C_GRID,
    c_tie_grid: tuple[float, ...] | str = SEPARATE,
    folds: int = 5,
    ties: bool = True,
    monotone_discounts: bool = False,
    much_better_margin: float = 1.0,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    curve: bool = True,
    form: bool = True,
    time_budget: TimeBudget | None = None,
) -> LearnedDCG:
    """Learn DCG gains and discounts from side-by-side answers, with intervals, tests, accuracies.

    1. ``method``: "likelihood" (ordered probit of the answers, the default) or "qp" (the
       paper's QP). C (the likelihood's ridge; the QP's C_s) and, for the QP, C_t are chosen
       by ``folds``-fold cross-validation over topics: held-out log-likelihood, or the paper's
       held-out accuracy. ``c_tie_grid``: "separate" (C_t searched over the C grid's values
       independently of C, the paper's Fig. 20), "same" (C_t = C) or a grid of its own.
       A choice at the edge of its grid extends the grid once by a factor 10; still at the
       edge, ``grid_warnings`` says so (for the likelihood only at the strong-penalty end:
       the weak end means the answers need no shrinkage, said in ``grid_notes``).
    2. W on every answer at the chosen values, then `rank_one` of ``T(W)``.
    3. ``bootstrap`` replicates resampling topics with replacement and repeating 1-2 on the
       (extended) grid; 95 % BCa intervals (`estimation.learned_dcg.intervals`) with the
       acceleration from a jackknife over up to `JACKKNIFE_GROUPS` groups of topics.
    4. ``form``: the likelihood-ratio test of the DCG form (whatever ``method``).
    5. ``curve``: held-out accuracy when each fold trains on 50, 100, 200, ... answers.

    ``time_budget`` (`estimation.learned_dcg.budget.TimeBudget`) bounds the wall time: spent
    during step 1, `TimeBudgetSpent` is raised (no fit); during step 3, the bootstrap stops
    with the replicates done (``bootstrap`` of ``bootstrap_requested``, ``bootstrap_stopped``,
    said in ``interval_method``); steps 2, 4 and 5 and the jackknife do not grow with the grid
    or the bootstrap and always run.

    ``much_better_margin`` (QP only: the margin asked of "much better" answers; the likelihood
    models the five answers directly). ``monotone_discounts``: also require non-increasing
    discounts (``T(W)[k, l] >= T(W)[k+1, l]``). Deterministic for a seed.

    Raises
    ------
    ValueError
        Bad arguments, or fewer than `MIN_STRICT_PAIRS` informative answers or fewer than
        `MIN_TOPICS` topics holding them.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if folds < 2:
        raise ValueError(f"folds must be >= 2, got {folds}")
    if bootstrap < 0:
        raise ValueError(f"bootstrap must be >= 0, got {bootstrap}")
    c_axis = _checked_grid(c_grid, "c_grid")
    same_tie = isinstance(c_tie_grid, str) and c_tie_grid == SAME
    if isinstance(c_tie_grid, str):
        if c_tie_grid not in (SAME, SEPARATE):
            raise ValueError(f"c_tie_grid must be {SEPARATE!r}, {SAME!r} or a grid, got {c_tie_grid!r}")
        tie_axis = list(c_axis)
    else:
        tie_axis = _checked_grid(c_tie_grid, "c_tie_grid")
    rng = np.random.default_rng(seed)
    fitter, used, axes = _fitter(
        data,
        n_grades,
        method,
        ties,
        monotone_discounts,
        much_better_margin,
        [c_axis] if same_tie else [c_axis, tie_axis],
    )
    identical = data.identical()
    strict = (data.preference != 0) & ~identical
    topics = _topics(data, used, strict, n_grades, folds, rng)
    ones = np.ones(topics.count)

    # 1. Cross-validation, the grid extended once at an edge.
    axes, grid, cv, best = _cross_validated_choice(fitter, topics, ones, axes, same_tie, method, time_budget)
    warnings, notes = _edge_messages(axes, grid[best], method, same_tie)
    chosen = grid[best]

    # 2. The fit on everything.
    final = fitter.fit(topics.answer_weights(ones), chosen, cv.models.get((0, best)) if cv.models else None)
    table = fitter.table(final)
    transformed = transformed_weights(table)
    form_one = rank_one(transformed)

    # 3. Bootstrap of the whole procedure; jackknife for the acceleration.
    replicates, failed, stopped = _bootstrap(
        fitter, topics, grid, axes, cv, final, bootstrap, rng, time_budget
    )
    jackknife = _jackknife(fitter, topics, chosen, final, rng) if bootstrap else []
    estimate = _summary(form_one)
    width = (n_grades, data.cutoff)
    intervals = bca_intervals(
        estimate,
        np.array(replicates).reshape(-1, estimate.size),
        np.array(jackknife).reshape(-1, estimate.size),
    )
    widened = [name for name, flag in zip(_summary_names(*width), intervals.widened, strict=True) if flag]

    accuracy = _accuracies(cv, topics, grid, best, data.cutoff, n_grades)

    test = form_test(ordinal_design(data, n_grades, ties=ties)).to_json() if form else {}
    accuracy_curve = (
        _learning_curve(fitter, topics, chosen, {g: accuracy[g] for g in ("exp", "linear")}, rng)
        if curve
        else []
    )
    return LearnedDCG(
        weights=table,
        transformed=transformed,
        gains=form_one.gains,
        discounts=form_one.discounts,
        sigma_ratio=form_one.sigma_ratio,
        c=float(chosen[0]),
        gains_low=intervals.low[:n_grades],
        gains_high=intervals.high[:n_grades],
        discounts_low=intervals.low[n_grades:-1],
        discounts_high=intervals.high[n_grades:-1],
        sigma_ratio_low=float(intervals.low[-1]),
        sigma_ratio_high=float(intervals.high[-1]),
        accuracy=accuracy,
        accuracy_curve=accuracy_curve,
        pairs=int(strict.sum()),
        ties=int(np.sum((data.preference == 0) & ~identical)) if ties else 0,
        dropped_identical=int(identical.sum()),
        groups=topics.count,
        cutoff=data.cutoff,
        n_grades=n_grades,
        method=method,
        c_tie=(float(chosen[-1]) if method == QP else None),
        c_grid=list(axes[0]),
        c_tie_grid=(list(axes[-1]) if method == QP else []),
        grid_warnings=warnings,
        grid_notes=notes,
        form_test=test,
        interval_method=_interval_method(bootstrap, len(replicates), stopped, len(jackknife), time_budget),
        bootstrap=len(replicates),
        bootstrap_failed=failed,
        bootstrap_requested=bootstrap,
        bootstrap_stopped=stopped,
        widened=widened,
        tie_curve=_tie_curve(cv, grid, best, method),
        coverage=coverage_note(method, len(data)) if bootstrap else {},
        heldout_differences=_heldout_differences(fitter, cv, topics, data, n_grades, table),
        options={
            "method": method,
            "c_tie": SAME if same_tie else ("grid" if not isinstance(c_tie_grid, str) else SEPARATE),
            "folds": folds,
            "ties": ties,
            "monotone_discounts": monotone_discounts,
            "much_better_margin": much_better_margin,
        },
    )


def _interval_method(
    requested: int, made: int, stopped: bool, jackknife: int, budget: TimeBudget | None
) -> str:
    """How the intervals were made; when the time budget stopped the bootstrap, how many
    replicates it made and what fewer replicates mean."""
    jackknife_words = f"acceleration from a jackknife over {jackknife} groups of topics"
    if not stopped:
        return (
            f"BCa bootstrap over topics ({requested} replicates of the whole fit, C chosen in each; "
            f"{jackknife_words})"
        )
    seconds = f" of {budget.seconds:g} s" if budget is not None and budget.seconds is not None else ""
    if made == 0:
        return (
            f"none: the refit's time budget{seconds} ran out before the first of {requested} bootstrap "
            "replicates of the whole fit was fitted, so there are no intervals"
        )
    return (
        f"BCa bootstrap over topics, stopped early: {made} of the {requested} replicates of the whole "
        f"fit (C chosen in each) were fitted before the refit's time budget{seconds} ran out; "
        f"{jackknife_words}. With fewer replicates the interval ends rest on fewer extreme "
        "replicates and move from one refit to the next: read them as rough, and the measured "
        f"coverage as that of {requested} replicates"
    )


def _checked_grid(values: tuple[float, ...], name: str) -> list[float]:
    grid = sorted({float(c) for c in values})
    if not grid or any(not np.isfinite(c) or c <= 0 for c in grid):
        raise ValueError(f"{name} must hold finite numbers > 0, got {values!r}")
    return grid


def _summary(form: RankOne) -> np.ndarray:
    return np.concatenate([form.gains, form.discounts, [form.sigma_ratio]])


def _summary_names(n_grades: int, cutoff: int) -> list[str]:
    return (
        [f"g{grade}" for grade in range(n_grades)] + [f"c{k + 1}" for k in range(cutoff)] + ["sigma2/sigma1"]
    )


def _extend(axes: list[list[float]], chosen: tuple[float, ...], method: str) -> list[list[float]] | None:
    """Each axis whose chosen value sits at an edge, one factor of 10 further; None if none."""
    changed = False
    new_axes = []
    for axis, value in zip(axes, chosen, strict=False):  # with C_t = C, one axis for both
        axis = list(axis)
        if value == axis[0]:
            axis.insert(0, axis[0] / 10.0)
            changed = True
        if value == axis[-1]:
            axis.append(axis[-1] * 10.0)
            changed = True
        new_axes.append(axis)
    return new_axes if changed else None


def _edge_messages(
    axes: list[list[float]], chosen: tuple[float, ...], method: str, same_tie: bool
) -> tuple[list[str], list[str]]:
    names = ["C"] if len(axes) == 1 and not same_tie else ["C", "C_t"]
    if same_tie:
        names = ["C (= C_t)"]
    warnings, notes = [], []
    for name, axis, value in zip(names, axes, chosen, strict=False):
        grid = ", ".join(f"{c:g}" for c in axis)
        if value == axis[0]:
            warnings.append(
                f"{name} = {value:g} sits at the low edge of its grid ({grid}) even after extending it "
                "once: a smaller value might fit better; widen the grid"
            )
        elif value == axis[-1]:
            if method == LIKELIHOOD:
                notes.append(
                    f"{name} = {value:g} is the weakest penalty of the grid ({grid}): the answers need "
                    "no shrinkage"
                )
            else:
                warnings.append(
                    f"{name} = {value:g} sits at the high edge of its grid ({grid}) even after extending "
                    "it once: a larger value might fit better; widen the grid"
                )
    return warnings, notes


def _nested_points(cv: _CrossValidation) -> list[int]:
    """Per fold, the grid point best on the other folds' scores: a choice that never sees the
    fold it is used on."""
    points = []
    for fold in range(cv.score.shape[1]):
        others = np.delete(cv.score, fold, axis=1).sum(axis=1)
        points.append(int(np.argmax(np.where(np.isfinite(others), others, -np.inf))))
    return points


def _nested_accuracy(cv: _CrossValidation, correct: np.ndarray | None, topics: _Topics) -> float:
    """Held-out accuracy with each fold's C chosen on the other folds (the best-of-grid
    accuracy chooses on the held-out fold too, hence is optimistic)."""
    if correct is None or correct.shape[1] == 0:
        return float("nan")
    fold_of_scored = topics.fold[topics.of_answer[topics.scored.rows]]
    total = np.zeros(correct.shape[1])
    for fold, point in enumerate(_nested_points(cv)):
        here = fold_of_scored == fold
        total[here] = correct[point, here]
    return float(total.mean())


def _heldout_differences(
    fitter: Fitter,
    cv: _CrossValidation,
    topics: _Topics,
    data: PreferenceData,
    n_grades: int,
    final: np.ndarray,
) -> dict[str, np.ndarray]:
    d = encode_lists(data.left, n_grades) - encode_lists(data.right, n_grades)
    # Answers no fold holds (topics without an informative answer) keep the in-sample value.
    out = {"utility": d @ final.reshape(-1), "learned_dcg": d @ _dcg_table(final).reshape(-1)}
    fold_of_answer = np.where(topics.of_answer >= 0, topics.fold[topics.of_answer], -1)
    for fold, point in enumerate(_nested_points(cv)):
        model = (cv.models or {}).get((fold, point))
        if model is None:
            continue
        here = fold_of_answer == fold
        table = fitter.table(model)
        out["utility"][here] = d[here] @ table.reshape(-1)
        out["learned_dcg"][here] = d[here] @ _dcg_table(table).reshape(-1)
    return out


def _dcg_table(table: np.ndarray) -> np.ndarray:
    """``c ⊗ g`` of a weight table's DCG form (zeros when it has none)."""
    try:
        form = rank_one(transformed_weights(table))
    except ValueError:
        return np.zeros_like(table)
    return np.outer(form.discounts, form.gains)


def _tie_curve(cv: _CrossValidation, grid: list[tuple[float, ...]], best: int, method: str) -> list[dict]:
    """Held-out share of tied answers predicted as ties and accuracy, per C_t at the chosen C."""
    if cv.tie_hit is None or cv.correct is None:
        return []
    rows = []
    for point, params in enumerate(grid):
        if params[0] != grid[best][0]:
            continue
        rows.append(
            {
                "c_tie": float(params[-1]) if method == QP else None,
                "ties_predicted": float(cv.tie_hit[point].mean()) if cv.tie_hit.shape[1] else None,
                "strict_accuracy": float(cv.correct[point].mean()) if cv.correct.shape[1] else None,
                "chosen": point == best,
            }
        )
    return rows


def _curve_sizes(n_train: int) -> list[int]:
    sizes = [50 * 2**j for j in range(20) if 50 * 2**j < n_train]
    return [*sizes, n_train]


def _learning_curve(
    fitter: Fitter,
    topics: _Topics,
    params: tuple[float, ...],
    standard: dict[str, float],
    rng: np.random.Generator,
) -> list[dict]:
    """Held-out accuracy when each fold trains on a random subset of its training answers."""
    answers = np.flatnonzero(topics.of_answer >= 0)
    fold_of_answer = topics.fold[topics.of_answer[answers]]
    fold_of_scored = topics.fold[topics.of_answer[topics.scored.rows]]
    n_train = min(int(np.sum(fold_of_answer != fold)) for fold in range(topics.n_folds))
    rows = []
    for size in _curve_sizes(n_train):
        correct = np.zeros(topics.scored.rows.size)
        for fold in range(topics.n_folds):
            chosen = np.zeros(topics.of_answer.size)
            chosen[rng.choice(answers[fold_of_answer != fold], size=size, replace=False)] = 1.0
            held_out = fold_of_scored == fold
            try:
                w = fitter.table(fitter.fit(chosen, params)).reshape(-1)
            except ValueError:  # e.g. a small subset without a strict answer: no fit, a coin
                correct[held_out] = 0.5
                continue
            correct[held_out] = _correct(w, topics.scored.d[held_out], topics.scored.wanted[held_out])
        # The standard DCGs need no training: the same held-out answers at every size.
        rows.append({"answers": size, "learned": float(correct.mean())} | standard)
    return rows
