"""The budget planner: replay judging campaigns with the qrels as the oracle.

For each sampling strategy and budget, `plan_budgets` runs many seeded campaigns through the
core's own loop (`estimation.simulation.batch`), with the qrels standing in for the assessors,
and summarises how close the estimates came to the truth and how often the confidence
interval held it. A coordinator reads off the budget a strategy needs for an error or an
interval width (`budget_needed`), and how much one strategy saves against another.

Strategies (one campaign pools every run given; a topic costs its pooled documents):

- ``passive``: topics drawn uniformly (q = p), every pooled document of a drawn topic judged;
  the self-normalised query-level estimator (Sawade et al. 2013, Sect. 4).
- ``active``: topics drawn from the cost-sensitive q* of Sawade et al. (2013, Thm 1/2,
  Eqs. 16-17) under the label model, mixed with p (`estimation.sampling.queries.DEFAULT_MIX`).
- ``items``: (topic, document) pairs drawn from Schnabel et al.'s (2016) Q* (Eqs. 5-6 for one
  system, Eq. 13 for a difference), one judgment per draw; DCG only (the metric must be linear
  in the labels).
- ``judged``: a model judge labelled every pooled pair; human labels are drawn where the
  calibrated judge is least sure and the pair matters most, and the estimate corrects the
  judge's calibrated values with them (`estimation.judges`, `estimation.simulation.judged`);
  DCG only; needs the judge's labels in the replay (external calibration when given, else the
  internal two-stage one).

The estimand is the one `python -m estimation evaluate` reports: the mean over **every
qrels topic** (topics no run ranks count 0). Run topics without qrels are ignored. The pool
holds the qrels topics some run ranks; if it holds fewer than the qrels (``m_pool < m``),
every estimate is multiplied by ``m_pool / m``, which is exact because the left-out topics
score 0 for every run.

Seeds: repetition ``r`` draws from ``numpy.random.default_rng([seed, r])``, one uniform per
draw, for every strategy (common random numbers); all budgets of a repetition share its draws,
as if one campaign were stopped at each budget. `estimation.simulation.loop.simulate_query_level`
and `simulate_item_level` with that generator reproduce a repetition draw for draw.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from estimation.formats.trec import Run
from estimation.judges.calibration import Calibration, judge_classes
from estimation.metrics.spec import Metric
from estimation.metrics.values import summarize_run
from estimation.sampling.budget_loop import draw_units
from estimation.sampling.items import item_sampling_distribution, system_weights
from estimation.sampling.pool import Pool
from estimation.sampling.pool_build import build_pool
from estimation.sampling.queries import optimal_query_distribution, passive_distribution
from estimation.sampling.results import SamplingDistribution
from estimation.simulation.batch import simulate_item_level_batch, simulate_query_level_batch
from estimation.simulation.judged import JudgedReplay, replay_external, replay_internal

PlannerGoal = Literal["one", "difference"]
GOAL_SYSTEMS = {"one": 1, "difference": 2}
DEFAULT_TOPIC_MULTIPLES = (10, 20, 40)
"""Default budgets: the cost of about this many topics (times the mean pooled topic cost)."""
DEFAULT_REPETITIONS = 500
"""Coverage to about ± 1 point (its standard error at 0.95); a few seconds on Robust03."""


@dataclass(frozen=True)
class PlannerRow:
    """What campaigns of one strategy at one budget delivered, over the repetitions.

    Attributes
    ----------
    strategy : str
        ``"passive"``, ``"active"`` or ``"items"``.
    budget : float
        In cost units (1 per document unless item costs are given).
    truth : float
        The metric (goal ``"one"``) or the difference of the first two runs, as `evaluate`
        computes it over the qrels topics.
    mean : float
        Mean estimate over the repetitions that drew something.
    bias_se : float
        Monte-Carlo standard error of ``mean`` (sd of the estimates / sqrt(count)): the bias
        ``mean - truth`` is significant only when it is several of these.
    rmse : float
        Root mean squared error of the estimates about the truth.
    coverage : float
        Share of the repetitions whose confidence interval (query level: the Student t interval
        of `estimation.sampling.intervals.t_interval`, which the batch path computes; the dashboard's
        self-normalised one-system interval is Hall's skew-corrected t) holds the truth (a repetition with
        fewer than two draws has the interval (-inf, inf), which covers).
    mean_width : float
        Mean interval width (inf if some repetition had no finite interval).
    topics_judged : float
        Mean number of distinct topics with at least one judged document.
    spent : float
        Mean cost units spent (<= budget).
    n_repetitions : int
    n_without_estimate : int
        Repetitions whose first draw was already unaffordable (no estimate); left out of
        ``mean``, ``bias_se`` and ``rmse``.
    rmse_se, width_se : float
        Monte-Carlo standard errors of ``rmse`` (the delta method on the squared errors' mean)
        and of ``mean_width``: how far another set of replays could move them (nan with fewer
        than two repetitions or an infinite width).
    """

    strategy: str
    budget: float
    truth: float
    mean: float
    bias_se: float
    rmse: float
    coverage: float
    mean_width: float
    topics_judged: float
    spent: float
    n_repetitions: int
    n_without_estimate: int
    rmse_se: float = float("nan")
    width_se: float = float("nan")


@dataclass(frozen=True, eq=False)
class Replay:
    """Everything a replayed campaign needs, built once from the qrels and the runs.

    Attributes
    ----------
    pool : Pool
        The qrels topics some run ranks; all runs' top K pooled.
    metric : Metric
    goal : str
    truth : float
        As `python -m estimation evaluate` computes it (difference: first run minus second).
    topic_values : ndarray, shape (m_pool,)
        ``L(x)`` (or ``delta(x)``) per pool topic from the qrels: the query-level oracle.
    utility : ndarray, shape (m_pool, n)
        ``u = g(y) / g(y_max)`` per pooled document from the qrels (unjudged: 0): the
        item-level oracle.
    topic_cost : ndarray, shape (m_pool,)
        Raw cost of judging every pooled document of a topic.
    scale : float
        ``m_pool / m_qrels``: turns a mean over the pool into the mean over the qrels topics.
    judge_classes : ndarray of int, shape (m_pool, n), or None
        The judge's class per pooled document (`estimation.judges.calibration.judge_classes`;
        MISSING where it gave no label), when a judge is replayed.
    judge_calibration : Calibration or None
        External calibration of that judge; None: the internal two-stage one.
    """

    pool: Pool
    metric: Metric
    goal: PlannerGoal
    truth: float
    topic_values: np.ndarray
    utility: np.ndarray
    topic_cost: np.ndarray
    scale: float
    judge_classes: np.ndarray | None = None
    judge_calibration: Calibration | None = None

    @property
    def systems(self) -> tuple[int, ...]:
        return tuple(range(GOAL_SYSTEMS[self.goal]))


@dataclass(frozen=True)
class BudgetNeed:
    """The budget at which a strategy's curve reaches a target; ``extrapolated`` if outside the grid."""

    budget: float
    extrapolated: bool


def prepare_replay(
    qrels: Mapping[str, Mapping[str, int]],
    runs: Sequence[Run],
    metric: Metric,
    goal: PlannerGoal,
    *,
    labels: Mapping[tuple[str, str], Sequence[float]] | None = None,
    item_cost: Mapping[str, float] | None = None,
    judge: Mapping[tuple[str, str], tuple[int | None, Sequence[float] | None]] | None = None,
    judge_calibration: Calibration | None = None,
) -> Replay:
    """Build the pool, the oracles and the truth for `plan_budgets`.

    Parameters
    ----------
    qrels : mapping qid -> docno -> grade
        Grades in 0..``metric.y_max`` (`estimation.formats.trec.read_qrels` reads negatives as 0).
    runs : sequence of Run
        ``"one"`` evaluates the first, ``"difference"`` the first minus the second; every run
        is pooled (its top K costs judging).
    metric : Metric
    goal : {"one", "difference"}
    labels : mapping (qid, docno) -> probabilities, optional
        Label model for active sampling; default uniform over the grades.
    item_cost : mapping docno -> cost, optional
        Default 1 per document.
    judge : mapping (qid, docno) -> (grade or None, probabilities or None), optional
        A model judge's labels, for the ``judged`` strategy; pairs it did not label are MISSING.
    judge_calibration : Calibration, optional
        Its external calibration (fitted on other topics); default: internal two-stage.
    """
    if goal not in GOAL_SYSTEMS:
        raise ValueError(f"unknown goal {goal!r}; expected 'one' or 'difference'")
    if len(runs) < GOAL_SYSTEMS[goal]:
        raise ValueError(f"goal {goal} needs at least {GOAL_SYSTEMS[goal]} run(s), got {len(runs)}")
    evaluations = [summarize_run(qrels, run, metric) for run in runs[: GOAL_SYSTEMS[goal]]]
    per_topic = [evaluation.per_query for evaluation in evaluations]
    truth = evaluations[0].mean if goal == "one" else evaluations[0].mean - evaluations[1].mean

    judged_runs = [
        (run.tag, {qid: docs for qid, docs in run.rankings.items() if qid in qrels}) for run in runs
    ]
    if not any(ranking for _, ranking in judged_runs):
        raise ValueError("no run ranks any topic of the qrels: nothing to judge")
    pool = build_pool(judged_runs, metric.cutoff, y_max=metric.y_max, labels=labels, item_cost=item_cost)

    values = np.array([per_topic[0][qid] for qid in pool.query_ids])
    if goal == "difference":
        values = values - np.array([per_topic[1][qid] for qid in pool.query_ids])
    gains = metric.gain_table()
    utility = np.zeros(pool.slot_used.shape)
    if metric.is_linear_in_labels and gains.max() > 0:
        for row, (qid, docnos) in enumerate(zip(pool.query_ids, pool.item_ids, strict=True)):
            grades = [qrels[qid].get(docno, 0) for docno in docnos]
            utility[row, : len(docnos)] = gains[grades] / gains.max()
    classes = None
    if judge is not None:
        classes = np.full(pool.slot_used.shape, -1, dtype=np.int64)
        for row, (qid, docnos) in enumerate(zip(pool.query_ids, pool.item_ids, strict=True)):
            found = [judge.get((qid, docno), (None, None)) for docno in docnos]
            classes[row, : len(docnos)] = judge_classes(
                [grade for grade, _ in found], [probs for _, probs in found], n_grades=metric.y_max + 1
            )
    return Replay(
        pool=pool,
        metric=metric,
        goal=goal,
        truth=float(truth),
        topic_values=values,
        utility=utility,
        topic_cost=pool.item_cost.sum(axis=1),  # every slot comes from some run's top K
        scale=pool.n_queries / len(qrels),
        judge_classes=classes,
        judge_calibration=judge_calibration,
    )


def default_budgets(replay: Replay, multiples: Sequence[float] = DEFAULT_TOPIC_MULTIPLES) -> np.ndarray:
    """The cost of about ``multiples`` topics: each times the mean pooled topic cost."""
    mean_cost = float(replay.topic_cost.mean())
    if mean_cost <= 0:
        raise ValueError("every pooled document costs 0: give budgets explicitly")
    return np.array([multiple * mean_cost for multiple in multiples], dtype=float)


def plan_budgets(
    replay: Replay,
    strategies: Sequence[str] | None = None,
    budgets: Sequence[float] | None = None,
    *,
    repetitions: int = DEFAULT_REPETITIONS,
    seed: int = 0,
    confidence: float = 0.95,
) -> list[PlannerRow]:
    """Replay campaigns for every strategy and budget; one `PlannerRow` per pair.

    Parameters
    ----------
    replay : Replay
        From `prepare_replay`.
    strategies : sequence of {"passive", "active", "items"}, optional
        Default: every strategy that applies to the metric (``active`` needs DCG or ERR,
        ``items`` DCG).
    budgets : sequence of float, optional
        Cost units; default `default_budgets`.
    repetitions : int
        Campaigns per strategy (each is stopped at every budget).
    seed : int
        >= 0; see the module docstring.
    confidence : float
        Level of the intervals (the core's CLT intervals, as the dashboard shows them).

    Returns
    -------
    list of PlannerRow
        Strategy-major, budgets in the order given.
    """
    has_judge = replay.judge_classes is not None
    chosen = (
        applicable_strategies(replay.metric, judge=has_judge) if strategies is None else tuple(strategies)
    )
    for strategy in chosen:
        check_strategy(strategy, replay.metric, judge=has_judge)
    budget_array = default_budgets(replay) if budgets is None else np.asarray(budgets, dtype=float)
    if budget_array.ndim != 1 or budget_array.size == 0 or np.any(~(budget_array > 0)):
        raise ValueError(f"budgets must be positive numbers, got {list(np.atleast_1d(budget_array))}")
    if int(repetitions) != repetitions or repetitions < 2:
        raise ValueError(f"repetitions must be an integer >= 2, got {repetitions!r}")
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    rows = []
    for strategy in chosen:
        outcome = PLANNED[strategy].replay(replay, budget_array, int(repetitions), int(seed), confidence)
        rows += [
            _summarise(strategy, budget, replay.truth, *outcome[b]) for b, budget in enumerate(budget_array)
        ]
    return rows


def applicable_strategies(metric: Metric, *, judge: bool = False) -> tuple[str, ...]:
    """The strategies that can estimate ``metric`` (``judged`` only when a judge is replayed)."""
    return tuple(name for name, planned in PLANNED.items() if planned.refusal(metric, judge) is None)


def check_strategy(strategy: str, metric: Metric, *, judge: bool = False) -> None:
    """ValueError for an unknown strategy or one that cannot estimate ``metric``."""
    if strategy not in PLANNED:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(PLANNED)}")
    reason = PLANNED[strategy].refusal(metric, judge)
    if reason is not None:
        raise ValueError(f"strategy {strategy} cannot estimate {metric}: {reason}")


def budget_needed(
    rows: Sequence[PlannerRow], strategy: str, target: float, *, quantity: str = "rmse"
) -> BudgetNeed:
    """The budget at which ``strategy``'s ``quantity`` (``"rmse"`` or ``"mean_width"``) falls to ``target``.

    Interpolates log(quantity) against log(budget) between the two budgets whose values
    bracket the target (errors fall roughly as 1/sqrt(budget), a straight line in log-log),
    searching from the largest budget down: at tiny budgets the curves are noisy. Rows where
    some campaign could not afford a first draw are left out (their error is over the lucky
    campaigns only). Outside the budgets simulated, the nearest segment's line is extended and
    ``extrapolated`` is set. nan when fewer than two budgets have a finite positive value, or
    the curve does not fall.
    """
    points = sorted(
        (row.budget, getattr(row, quantity))
        for row in rows
        if row.strategy == strategy
        and row.n_without_estimate == 0
        and np.isfinite(getattr(row, quantity))
        and getattr(row, quantity) > 0
    )
    if len(points) < 2 or not target > 0:
        return BudgetNeed(float("nan"), True)
    log_budget = np.log([budget for budget, _ in points])
    log_value = np.log([value for _, value in points])
    log_target = np.log(target)
    for i in reversed(range(len(points) - 1)):
        low, high = sorted((log_value[i], log_value[i + 1]))
        if low <= log_target <= high and log_value[i] != log_value[i + 1]:
            return BudgetNeed(float(np.exp(_line(log_value, log_budget, i, log_target))), False)
    segment = 0 if log_target > log_value[0] else len(points) - 2
    if log_value[segment + 1] >= log_value[segment]:
        return BudgetNeed(float("nan"), True)
    return BudgetNeed(float(np.exp(_line(log_value, log_budget, segment, log_target))), True)


def saving(rows: Sequence[PlannerRow], strategy: str, budget: float, baseline: str = "passive") -> BudgetNeed:
    """Share of ``budget`` that ``strategy`` saves against ``baseline`` at equal RMSE.

    ``1 - b_strategy / budget`` where ``b_strategy`` is the budget at which ``strategy``
    reaches the RMSE ``baseline`` has at ``budget`` (`budget_needed`); negative when it needs more.
    """
    (reference,) = [row.rmse for row in rows if row.strategy == baseline and row.budget == budget]
    need = budget_needed(rows, strategy, reference)
    return BudgetNeed(1.0 - need.budget / budget, need.extrapolated)


def _line(x: np.ndarray, y: np.ndarray, i: int, at: float) -> float:
    return float(y[i] + (y[i + 1] - y[i]) * (at - x[i]) / (x[i + 1] - x[i]))


def _active_refusal(metric: Metric, judge: bool) -> str | None:
    if metric.name == "nDCG":
        return "its sampling distribution needs DCG@K or ERR@K (nDCG is reported, not planned)"
    return None


def _items_refusal(metric: Metric, judge: bool) -> str | None:
    if not metric.is_linear_in_labels:
        return "item-level sampling needs a metric linear in the labels (DCG@K)"
    return None


def _judged_refusal(metric: Metric, judge: bool) -> str | None:
    if not judge:
        return _items_refusal(metric, judge) or "it needs a model judge's labels of the pool (--judge)"
    return _items_refusal(metric, judge)


def _any_metric(metric: Metric, judge: bool) -> str | None:
    return None


# Per budget: estimates, lows, highs, topics judged, spent (each shape (R,)).
_Outcome = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _replay_query_level(
    replay: Replay,
    distribution: SamplingDistribution,
    budgets: np.ndarray,
    repetitions: int,
    seed: int,
    confidence: float,
) -> list[_Outcome]:
    shape = (len(budgets), repetitions)
    estimates, lows, highs, topics, spent = (np.zeros(shape) for _ in range(5))
    for r in range(repetitions):
        batch = simulate_query_level_batch(
            replay.topic_values,
            replay.topic_cost,
            distribution,
            replay.pool.query_weight,
            budgets,
            1,
            np.random.default_rng([seed, r]),
            confidence=confidence,
        )
        low, high = batch.interval()
        scale = replay.scale
        estimates[:, r], lows[:, r], highs[:, r] = (a[:, 0] * scale for a in (batch.estimates, low, high))
        spent[:, r] = batch.spent[:, 0]
        topics[:, r] = batch.n_judged[:, 0]
    return [(estimates[b], lows[b], highs[b], topics[b], spent[b]) for b in range(len(budgets))]


def _replay_passive(
    replay: Replay, budgets: np.ndarray, repetitions: int, seed: int, confidence: float
) -> list[_Outcome]:
    distribution = passive_distribution(replay.pool, query_cost=replay.topic_cost)
    return _replay_query_level(replay, distribution, budgets, repetitions, seed, confidence)


def _replay_active(
    replay: Replay, budgets: np.ndarray, repetitions: int, seed: int, confidence: float
) -> list[_Outcome]:
    distribution = optimal_query_distribution(
        replay.pool, replay.metric, replay.goal, replay.systems, query_cost=replay.topic_cost
    )
    return _replay_query_level(replay, distribution, budgets, repetitions, seed, confidence)


def _replay_items(
    replay: Replay, budgets: np.ndarray, repetitions: int, seed: int, confidence: float
) -> list[_Outcome]:
    pool = replay.pool
    shape = (len(budgets), repetitions)
    estimates, lows, highs, topics, spent = (np.zeros(shape) for _ in range(5))
    distribution = item_sampling_distribution(pool, replay.metric, replay.goal, replay.systems)
    weights = [system_weights(pool, replay.metric, system) for system in replay.systems]
    target = weights[0] if replay.goal == "one" else weights[0] - weights[1]
    factor = float(replay.metric.gain_table().max()) * replay.scale
    for r in range(repetitions):
        result = simulate_item_level_batch(
            replay.utility,
            distribution,
            target[None],
            1,
            np.random.default_rng([seed, r]),
            budget=budgets,
            item_cost=pool.item_cost,
            confidence=confidence,
        )
        low, high = result.interval("clt")
        estimates[:, r], lows[:, r], highs[:, r] = (
            a[:, 0, 0] * factor for a in (result.estimates, low, high)
        )
        spent[:, r] = result.spent[:, 0]
        topics[:, r] = _item_topics_judged(distribution.q, result.n_draws[:, 0], seed, r)
    return [(estimates[b], lows[b], highs[b], topics[b], spent[b]) for b in range(len(budgets))]


def _replay_judged(
    replay: Replay, budgets: np.ndarray, repetitions: int, seed: int, confidence: float
) -> list[_Outcome]:
    if replay.judge_classes is None:
        raise ValueError("the judged strategy needs a judge's labels in the replay")
    pool, metric = replay.pool, replay.metric
    weights = [system_weights(pool, metric, system) for system in replay.systems]
    target = weights[0] if replay.goal == "one" else weights[0] - weights[1]
    judged = JudgedReplay(
        target=target.ravel(),
        no_model_weight=np.sum([np.abs(w) for w in weights], axis=0).ravel(),
        human_gain=(replay.utility * float(metric.gain_table().max())).ravel(),
        classes=replay.judge_classes.ravel(),
        n_grades=metric.y_max + 1,
        n_slots=pool.n_slots,
    )
    if replay.judge_calibration is not None:
        outcomes = replay_external(
            judged, replay.judge_calibration, budgets, repetitions, seed, confidence=confidence
        )
    else:
        outcomes = replay_internal(judged, budgets, repetitions, seed, confidence=confidence)
    scale = replay.scale
    return [(e * scale, low * scale, high * scale, n, s) for e, low, high, n, s in outcomes]


def _item_topics_judged(q: np.ndarray, n_draws: np.ndarray, seed: int, repetition: int) -> np.ndarray:
    """Distinct topics among each budget's draws, regenerated from the repetition's uniforms.

    The item-level batch path consumes one uniform per draw in order, like the loop, so the
    first ``n`` draws are ``draw_units(q, u[:n])``.
    """
    longest = int(n_draws.max())
    if longest == 0:
        return np.zeros(n_draws.shape)
    uniforms = np.random.default_rng([seed, repetition]).random(longest)
    topic_of = draw_units(q.ravel(), uniforms) // q.shape[1]
    return np.array([np.unique(topic_of[:n]).size for n in n_draws], dtype=float)


@dataclass(frozen=True)
class Accuracy:
    """How seeded estimates did against the truth (the columns of `PlannerRow` of the same names)."""

    mean: float
    bias_se: float
    rmse: float
    coverage: float
    mean_width: float
    n_without_estimate: int
    rmse_se: float = float("nan")
    width_se: float = float("nan")


def accuracy(estimates: np.ndarray, lows: np.ndarray, highs: np.ndarray, truth: float) -> Accuracy:
    """Mean, Monte-Carlo standard error of the mean, RMSE (over the estimates that are not nan),
    coverage and mean width of the intervals (over every repetition) about `truth`."""
    known = estimates[~np.isnan(estimates)]
    count = known.size
    squared = (known - truth) ** 2
    rmse = float(np.sqrt(np.mean(squared))) if count else float("nan")
    widths = highs - lows
    # The delta method, d sqrt(m) = dm / (2 sqrt(m)); 0 when every estimate is exact.
    rmse_se = (
        float("nan")
        if count < 2
        else 0.0
        if rmse == 0
        else float(squared.std(ddof=1) / np.sqrt(count) / (2 * rmse))
    )
    finite_widths = widths.size > 1 and bool(np.all(np.isfinite(widths)))
    width_se = float(widths.std(ddof=1) / np.sqrt(widths.size)) if finite_widths else float("nan")
    return Accuracy(
        mean=float(known.mean()) if count else float("nan"),
        bias_se=float(known.std(ddof=1) / np.sqrt(count)) if count > 1 else float("nan"),
        rmse=rmse,
        coverage=float(np.mean((lows <= truth) & (truth <= highs))),
        mean_width=float(np.mean(widths)),
        n_without_estimate=int(estimates.size - count),
        rmse_se=rmse_se,
        width_se=width_se,
    )


def _summarise(
    strategy: str,
    budget: float,
    truth: float,
    estimates: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    topics: np.ndarray,
    spent: np.ndarray,
) -> PlannerRow:
    summary = accuracy(estimates, lows, highs, truth)
    return PlannerRow(
        strategy=strategy,
        budget=float(budget),
        truth=truth,
        mean=summary.mean,
        bias_se=summary.bias_se,
        rmse=summary.rmse,
        coverage=summary.coverage,
        mean_width=summary.mean_width,
        topics_judged=float(topics.mean()),
        spent=float(spent.mean()),
        n_repetitions=estimates.size,
        n_without_estimate=summary.n_without_estimate,
        rmse_se=summary.rmse_se,
        width_se=summary.width_se,
    )


NOISE_STANDARD_ERRORS = 2.0
"""Two replayed figures differ beyond the replays' own noise when they are further apart than
this many of their combined Monte-Carlo standard errors (about a 95 % two-sided test each)."""


def clearly_below(low: float, low_se: float, high: float, high_se: float) -> bool:
    """Whether `low` is below `high` by more than the replays' noise (`NOISE_STANDARD_ERRORS`).
    A finite value is clearly below an infinite one (no interval in some replays); an unknown
    standard error (nan) tells nothing."""
    if not np.isfinite(low):
        return False
    if np.isinf(high):
        return True
    noise = NOISE_STANDARD_ERRORS * float(np.hypot(low_se, high_se))
    return bool(np.isfinite(noise) and high - low > noise)


@dataclass(frozen=True)
class Standing:
    """How the strategies replayed at one budget compare, by their typical error (RMSE).

    ``best`` has a lower error than every other beyond the replays' noise and an interval width
    no other beats beyond it (None when there is no such strategy); ``tied`` are the strategies
    within the noise of the lowest error, lowest first (``best`` alone when there is one);
    ``worse`` the others, lowest first; ``unknown`` those with no error at this budget (some
    replayed campaign could not afford its first draw)."""

    best: str | None
    tied: tuple[str, ...]
    worse: tuple[str, ...]
    unknown: tuple[str, ...]


def standing_at(rows: Sequence[PlannerRow], budget: float) -> Standing:
    """The strategies' `Standing` at `budget`, from the rows of that budget."""
    here = [row for row in rows if row.budget == budget]
    known = sorted(
        (row for row in here if row.n_without_estimate == 0 and np.isfinite(row.rmse)),
        key=lambda row: row.rmse,
    )
    unknown = tuple(row.strategy for row in here if row not in known)
    if not known:
        return Standing(None, (), (), unknown)
    lowest = known[0]
    tied = [row for row in known if not clearly_below(lowest.rmse, lowest.rmse_se, row.rmse, row.rmse_se)]
    worse = [row for row in known if row not in tied]
    narrower_elsewhere = any(
        clearly_below(row.mean_width, row.width_se, lowest.mean_width, lowest.width_se) for row in known[1:]
    )
    best = lowest.strategy if len(tied) == 1 and not narrower_elsewhere else None
    return Standing(best, tuple(row.strategy for row in tied), tuple(row.strategy for row in worse), unknown)


__all__ = [
    "DEFAULT_REPETITIONS",
    "Accuracy",
    "BASELINE",
    "PLANNED",
    "PlannedStrategy",
    "BudgetNeed",
    "PlannerRow",
    "Replay",
    "Standing",
    "clearly_below",
    "standing_at",
    "accuracy",
    "applicable_strategies",
    "budget_needed",
    "check_strategy",
    "default_budgets",
    "plan_budgets",
    "prepare_replay",
    "saving",
]


# Per budget: estimates, lows, highs, topics judged, spent, from (replay, budgets, repetitions,
# seed, confidence).
_Replayer = Callable[[Replay, np.ndarray, int, int, float], list[_Outcome]]


@dataclass(frozen=True)
class PlannedStrategy:
    """How the planner replays one sampling strategy: `replay` runs its seeded campaigns at every
    budget; `refusal` says why it cannot estimate a metric (None when it can), given whether a
    judge's labels are replayed. The app's strategies name theirs (`planned_as`)."""

    name: str
    replay: _Replayer
    refusal: Callable[[Metric, bool], str | None] = _any_metric
    # Whether it replays a model judge's labels (planned only for a campaign with a judge).
    needs_judge: bool = False
    # The strategy it adds to, whose saving the advice also states, in the advice's words
    # (judged: single documents, without the judge).
    builds_on: str | None = None
    builds_on_words: str = ""


BASELINE = "passive"
"""The planner's reference: topics at random, the simplest to explain. Every saving the advice
states is measured against it, and its interval width anchors "judgments needed"."""

PLANNED: dict[str, PlannedStrategy] = {
    planned.name: planned
    for planned in (
        PlannedStrategy(BASELINE, _replay_passive),
        PlannedStrategy("active", _replay_active, _active_refusal),
        PlannedStrategy("items", _replay_items, _items_refusal),
        PlannedStrategy(
            "judged",
            _replay_judged,
            _judged_refusal,
            needs_judge=True,
            builds_on="items",
            builds_on_words="single documents without the judge",
        ),
    )
}


def __getattr__(name: str) -> object:
    """The planner's strategies were STRATEGIES (a tuple of names): now PLANNED, by name."""
    if name == "STRATEGIES":
        import warnings

        warnings.warn(f"{__name__}.STRATEGIES is now tuple(PLANNED)", DeprecationWarning, stacklevel=2)
        return tuple(PLANNED)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
