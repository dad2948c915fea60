"""Reproduce Sawade et al. (2013), Sect. 5, on real graded data: LETOR 4.0 MQ2008.

Protocol (docs/estimation.md, "Simulation protocol"):

1. Fit on subset S1 (157 queries): two linear rankers (ridge regression on the grade and a
   pairwise logistic ranker, both on the 46 LETOR features) and an ordinal (cumulative
   logit) label model on the features, the rankers' scores and ranks (l2 chosen on half of
   S1). The pool is S4 + S5 (313 queries); none of its labels is used before the truth.
2. Pool: per query, the union of both rankers' top 10; theta from the label model; every
   document costs 1 (LETOR 4.0 features are min-max normalised within each query, so the
   length features 16-20 hold no absolute length to take a logarithm of). A budget unit is
   one document: a query costs the number of documents of its top 10 (the union of both top
   10s when comparing). Queries without any relevant document stay in the pool and count
   as 0: an unlabelled pool cannot tell which they are.
3. Truth: DCG@10 (gain 2^y - 1) and ERR@10 (y_max = 2) over the whole pool with its labels.
4. For each budget (25..300 documents, i.e. about 3 to 34 queries) and method (passive,
   active, active_uniD, active_uniC) 5,000 seeded repetitions of Algorithm 1, as Sawade et
   al. (the protocol asks for at least 1,000; ``--repetitions``); mean absolute error with
   its standard error and CI coverage; for the comparison also the model-selection error;
   the budget that active saves at equal error, plus the same saving in the large-budget
   limit computed exactly from the true per-query values (no simulation noise), also for
   the pool without queries that lack a relevant document and for the other two choices of
   fitting subset.

Run: ``nice .venv/bin/python bench/reproduce_mq2008.py`` (about a minute on one core).
Writes bench/results/mq2008.json, .md and .png.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path[:0] = [str(REPO_ROOT), str(BENCH_DIR)]

from _mq2008_models import (  # noqa: E402
    LinearRanker,
    Standardizer,
    fit_label_model,
    fit_pairwise_ranker,
    fit_ridge_ranker,
    label_model_features,
    rank_rows,
)
from _mq2008_report import plot_results, savings_table, write_markdown  # noqa: E402
from letor import LetorSet, read_letor  # noqa: E402

from estimation.label_models.ordinal import OrdinalModel  # noqa: E402
from estimation.metrics.spec import Metric  # noqa: E402
from estimation.metrics.values import metric_values  # noqa: E402
from estimation.sampling.costs import query_costs  # noqa: E402
from estimation.sampling.pool import EMPTY, Pool  # noqa: E402
from estimation.sampling.queries import optimal_query_distribution, passive_distribution  # noqa: E402
from estimation.sampling.results import SamplingDistribution  # noqa: E402
from estimation.simulation.batch import QueryBatchResult, simulate_query_level_batch  # noqa: E402

DATA_DIR = Path(os.environ.get("SHARED_DATA_DIR", REPO_ROOT.parent / "shared" / "data")) / "mq2008"
RESULTS_DIR = BENCH_DIR / "results"
BUDGETS = (25, 50, 75, 100, 150, 200, 250, 300)
PASSIVE_EXTENSION = np.array([400.0, 500.0, 600.0, 800.0])
METHODS = ("passive", "active", "active_uniD", "active_uniC")
CUTOFF = 10
Y_MAX = 2
MIX = 0.1
LABEL_MODEL_L2_GRID = (0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0)


@dataclass(frozen=True, eq=False)
class Experiment:
    """The pool, its true per-query metric values and what was fitted to build it."""

    pool: Pool
    true_values: dict[str, np.ndarray]  # metric name -> (m, 2): L of each system per query
    no_relevant: np.ndarray  # (m,) bool: the query has no document of grade >= 1 in the pool data
    n_fit_queries: int
    fit_no_relevant: int
    label_model: OrdinalModel
    label_model_l2: float
    label_model_validation: dict[float, float]
    label_model_pool_loglik: float
    prior_pool_loglik: float


def build_experiment(fit_files: list[Path], pool_files: list[Path], seed: int) -> Experiment:
    fit_data = read_letor(fit_files)
    pool_data = read_letor(pool_files)
    standardizer = Standardizer.fit(fit_data.features)
    rankers = [fit_ridge_ranker(fit_data, standardizer), fit_pairwise_ranker(fit_data, standardizer)]
    features_fit = label_model_features(fit_data, standardizer, rankers)
    label_model, l2, validation = fit_label_model(
        features_fit, fit_data, Y_MAX + 1, LABEL_MODEL_L2_GRID, np.random.default_rng(seed)
    )
    probabilities = label_model.predict_proba(label_model_features(pool_data, standardizer, rankers))
    rows = np.arange(pool_data.grades.size)
    pool_loglik = float(np.mean(np.log(probabilities[rows, pool_data.grades])))
    prior = np.bincount(fit_data.grades, minlength=Y_MAX + 1) / fit_data.grades.size
    prior_loglik = float(np.mean(np.log(prior[pool_data.grades])))

    pool, grade_matrices = _pool_from(pool_data, rankers, probabilities)
    no_relevant = np.array([pool_data.grades[rows_].max() == 0 for rows_ in pool_data.query_slices()])
    true_values = {}
    for metric in metrics():
        true_values[metric.name] = np.stack([metric_values(g, metric) for g in grade_matrices], axis=1)
    fit_no_relevant = sum(int(fit_data.grades[r].max() == 0) for r in fit_data.query_slices())
    return Experiment(
        pool=pool,
        true_values=true_values,
        no_relevant=no_relevant,
        n_fit_queries=fit_data.n_queries,
        fit_no_relevant=fit_no_relevant,
        label_model=label_model,
        label_model_l2=l2,
        label_model_validation=validation,
        label_model_pool_loglik=pool_loglik,
        prior_pool_loglik=prior_loglik,
    )


def restrict(experiment: Experiment, keep: np.ndarray) -> Experiment:
    """The same experiment on the pool queries where ``keep`` is True (uniform p over them)."""
    pool = experiment.pool
    smaller = Pool(
        theta=pool.theta[keep],
        slot_used=pool.slot_used[keep],
        rankings=pool.rankings[:, keep],
        item_cost=pool.item_cost[keep],
        query_weight=np.full(int(keep.sum()), 1.0 / keep.sum()),
        query_ids=tuple(q for q, k in zip(pool.query_ids, keep, strict=True) if k),
        item_ids=tuple(items for items, k in zip(pool.item_ids, keep, strict=True) if k),
        system_names=pool.system_names,
    )
    return dataclasses.replace(
        experiment,
        pool=smaller,
        true_values={name: values[keep] for name, values in experiment.true_values.items()},
        no_relevant=experiment.no_relevant[keep],
    )


def metrics() -> tuple[Metric, Metric]:
    return (Metric("DCG", CUTOFF, gain="exp", y_max=Y_MAX), Metric("ERR", CUTOFF, y_max=Y_MAX))


def _pool_from(
    data: LetorSet, rankers: list[LinearRanker], probabilities: np.ndarray
) -> tuple[Pool, list[np.ndarray]]:
    """Slots = union of the rankers' top K per query (ranker 0's first); true grade matrices."""
    top_rows = [[ranked[:CUTOFF] for ranked in rank_rows(data, r.scores(data.features))] for r in rankers]
    unions = []
    for per_query in zip(*top_rows, strict=True):
        union: list[int] = []
        for ranked in per_query:
            union += [int(row) for row in ranked if row not in union]
        unions.append(union)
    m, n = data.n_queries, max(len(u) for u in unions)
    theta = np.zeros((m, n, Y_MAX + 1))
    theta[:, :, 0] = 1.0  # unused slots: any valid distribution
    slot_used = np.zeros((m, n), dtype=bool)
    rankings = np.full((len(rankers), m, CUTOFF), EMPTY, dtype=np.int64)
    grade_matrices = [np.full((m, CUTOFF), -1, dtype=np.int64) for _ in rankers]
    item_ids = []
    for query, union in enumerate(unions):
        slot_of = {row: slot for slot, row in enumerate(union)}
        theta[query, : len(union)] = probabilities[union]
        slot_used[query, : len(union)] = True
        item_ids.append(tuple(data.docnos[row] for row in union))
        for system, per_query in enumerate(top_rows):
            ranked = per_query[query]
            rankings[system, query, : ranked.size] = [slot_of[int(row)] for row in ranked]
            grade_matrices[system][query, : ranked.size] = data.grades[ranked]
    pool = Pool(
        theta=theta,
        slot_used=slot_used,
        rankings=rankings,
        item_cost=slot_used.astype(float),
        query_weight=np.full(m, 1.0 / m),
        query_ids=data.query_ids,
        item_ids=tuple(item_ids),
        system_names=tuple(r.name for r in rankers),
    )
    return pool, grade_matrices


def distributions(
    pool: Pool, metric: Metric, goal: str, systems: tuple[int, ...], cost: np.ndarray
) -> dict[str, SamplingDistribution]:
    """q per method. Costs only enter through their ratios, so the document unit is fine."""
    common = {"query_cost": cost, "mix": MIX}
    return {
        "passive": passive_distribution(pool),
        "active": optimal_query_distribution(pool, metric, goal, systems, **common),
        "active_uniD": optimal_query_distribution(pool, metric, goal, systems, uniform_labels=True, **common),
        "active_uniC": optimal_query_distribution(pool, metric, goal, systems, unit_costs=True, **common),
    }


def summarise(errors: np.ndarray) -> dict[str, float]:
    """Mean over repetitions and its standard error."""
    return {"mean": float(errors.mean()), "se": float(errors.std(ddof=1) / np.sqrt(errors.size))}


def asymptotic_savings(pool: Pool, true_values: dict[str, np.ndarray]) -> dict:
    """Budget saved at equal error in the large-budget limit, from the true per-query values.

    With n draws from q the self-normalised estimator has variance
    ``(1/n) sum_x p(x)^2 (L(x) - R)^2 / q(x)`` and a draw costs ``sum_x q(x) lambda(x)`` on
    average (Sawade et al. 2013, proof of Theorem 1), so the budget needed for a given error
    is proportional to ``V(q) = [sum p^2 (L - R)^2 / q] [sum q lambda]``, and a method saves
    ``1 - V(q) / V(p)`` against passive sampling. This ignores free repeats and the
    small-sample bias of the ratio estimator; it is free of simulation noise. ``oracle`` is
    q* computed from the true values (a perfect label model), mixed with p like the others.
    """
    p = pool.query_weight
    out: dict = {}
    for setting, metric, goal, systems, values, cost in _settings(pool, true_values):

        def budget_factor(q: np.ndarray, values: np.ndarray = values, cost: np.ndarray = cost) -> float:
            reference = float(p @ values)
            return float(np.sum(p**2 * (values - reference) ** 2 / q) * (q @ cost))

        passive = budget_factor(pool.query_weight)
        row = {}
        for method, distribution in distributions(pool, metric, goal, systems, cost).items():
            if method != "passive":
                row[method] = 1.0 - budget_factor(distribution.q) / passive
        ideal = p * np.abs(values - p @ values) / np.sqrt(cost)
        row["oracle"] = 1.0 - budget_factor((1 - MIX) * ideal / ideal.sum() + MIX * p) / passive
        out.setdefault(setting, {})[metric.name] = row
    return out


def _settings(
    pool: Pool, true_values: dict[str, np.ndarray]
) -> Iterator[tuple[str, Metric, str, tuple[int, ...], np.ndarray, np.ndarray]]:
    """(setting, metric, goal, systems, true per-query values, query cost in documents)."""
    one_costs = [
        query_costs(pool, [system], cutoff=CUTOFF, normalize=False) for system in range(pool.n_systems)
    ]
    pair_cost = query_costs(pool, [0, 1], cutoff=CUTOFF, normalize=False)
    for metric in metrics():
        values = true_values[metric.name]
        # One system at a time: a query costs the documents of that system's top 10.
        for system, name in enumerate(pool.system_names):
            yield name, metric, "one", (system,), values[:, system], one_costs[system]
        # The difference: labels for the union of both top 10s.
        yield "difference", metric, "difference", (0, 1), values[:, 0] - values[:, 1], pair_cost


def other_rotations(args: argparse.Namespace) -> list[dict]:
    """The same fit on each other subset (pool = the remaining two), without simulation.

    Shows how much the noise-free savings depend on which subset the rankers and the label
    model were fitted on. Only for the default three-subset layout.
    """
    subsets = [*args.fit, *args.pool]
    if len(args.fit) != 1 or len(subsets) != 3:
        return []
    rotations = []
    for fit in subsets:
        if fit == args.fit[0]:
            continue
        pool_names = [name for name in subsets if name != fit]
        experiment = build_experiment(
            [DATA_DIR / f"{fit}.txt.gz"], [DATA_DIR / f"{name}.txt.gz" for name in pool_names], args.seed
        )
        rotations.append(
            {
                "fit_subsets": [fit],
                "pool_subsets": pool_names,
                "pool_queries": experiment.pool.n_queries,
                "truth": {
                    name: (experiment.pool.query_weight @ values).tolist()
                    for name, values in experiment.true_values.items()
                },
                "label_model_pool_loglik": experiment.label_model_pool_loglik,
                "asymptotic_savings": asymptotic_savings(experiment.pool, experiment.true_values),
            }
        )
        print(f"rotation: fit on {fit} done", flush=True)
    return rotations


def run(args: argparse.Namespace) -> dict:
    started = time.perf_counter()
    fit_files = [DATA_DIR / f"{name}.txt.gz" for name in args.fit]
    pool_files = [DATA_DIR / f"{name}.txt.gz" for name in args.pool]
    full = build_experiment(fit_files, pool_files, args.seed)
    relevant_only = restrict(full, ~full.no_relevant)
    experiment = relevant_only if args.drop_no_relevant else full
    pool = experiment.pool
    budgets = np.asarray(args.budgets, dtype=float)
    print(
        f"pool: {pool.n_queries} queries ({int(experiment.no_relevant.sum())} without a relevant document), "
        f"label model l2={full.label_model_l2:g}, pool log-likelihood "
        f"{full.label_model_pool_loglik:.4f} (grade prior: {full.prior_pool_loglik:.4f}) "
        f"[{time.perf_counter() - started:.1f}s]",
        flush=True,
    )
    rng = np.random.default_rng(args.seed)
    results: dict = {"one_system": {}, "comparison": {}}
    for setting, metric, goal, systems, values, cost in _settings(pool, experiment.true_values):
        truth = float(pool.query_weight @ values)
        entry: dict = {"truth": truth, "methods": {}}
        if goal == "difference":
            entry["truth_systems"] = (pool.query_weight @ experiment.true_values[metric.name]).tolist()
        for method, q in distributions(pool, metric, goal, systems, cost).items():
            # Passive also runs at larger budgets, so that active's error can be matched on
            # the passive curve beyond the largest reported budget.
            simulated = np.concatenate([budgets, PASSIVE_EXTENSION]) if method == "passive" else budgets
            batch = simulate_query_level_batch(
                values, cost, q, pool.query_weight, simulated, args.repetitions, rng
            )
            per_budget = _per_budget(simulated, np.abs(batch.estimates - truth), batch, truth)
            if goal == "difference":
                # A tie (estimate exactly 0: every drawn query has delta = 0) picks at random.
                wrong_sign = (np.sign(batch.estimates) != np.sign(truth)).astype(float)
                selection_error = np.where(batch.estimates == 0, 0.5, wrong_sign)
                for row, errors_at_budget in zip(per_budget, selection_error, strict=True):
                    row["selection_error"] = summarise(errors_at_budget)
            entry["methods"][method] = per_budget[: budgets.size]
            if method == "passive":
                entry["passive_extension"] = per_budget[budgets.size :]
        if goal == "difference":
            results["comparison"][metric.name] = entry
        else:
            results["one_system"].setdefault(metric.name, {})[setting] = entry
        print(f"{metric} {setting} done [{time.perf_counter() - started:.1f}s]", flush=True)
    one_costs = [query_costs(pool, [system], cutoff=CUTOFF, normalize=False) for system in range(2)]
    pair_cost = query_costs(pool, [0, 1], cutoff=CUTOFF, normalize=False)

    report = {
        "data": {
            "fit_subsets": list(args.fit),
            "pool_subsets": list(args.pool),
            "fit_queries": full.n_fit_queries,
            "fit_queries_without_relevant": full.fit_no_relevant,
            "pool_queries": pool.n_queries,
            "pool_queries_without_relevant": int(experiment.no_relevant.sum()),
            "queries_without_relevant": (
                "dropped from the pool" if args.drop_no_relevant else "kept, metric 0"
            ),
            "cutoff": CUTOFF,
            "y_max": Y_MAX,
            "systems": list(pool.system_names),
            "cost_unit": "one document (every document costs 1)",
            "mean_query_cost_one_system": [float(c.mean()) for c in one_costs],
            "mean_query_cost_union": float(pair_cost.mean()),
            "pool_cost_one_system": [float(c.sum()) for c in one_costs],
            "pool_cost_union": float(pair_cost.sum()),
        },
        "label_model": {
            "features": "46 standardised LETOR features, log(documents of the query), "
            "per ranker: score and 1/log2(1 + rank)",
            "l2": full.label_model_l2,
            "validation_loglik": {str(k): v for k, v in full.label_model_validation.items()},
            "pool_loglik_per_document": full.label_model_pool_loglik,
            "grade_prior_pool_loglik_per_document": full.prior_pool_loglik,
            "weights": full.label_model.weights.tolist(),
            "thresholds": full.label_model.thresholds.tolist(),
        },
        "protocol": {
            "budgets": list(args.budgets),
            "repetitions": args.repetitions,
            "seed": args.seed,
            "mix": MIX,
            "methods": list(METHODS),
            "estimator": "self-normalised importance weighting, CLT interval at 95 %",
            "budgets_share_draws": True,
            "passive_extension_budgets": PASSIVE_EXTENSION.tolist(),
        },
        "results": results,
        "other_rotations": other_rotations(args),
        "asymptotic_savings": {
            "all_queries": asymptotic_savings(full.pool, full.true_values),
            "queries_with_a_relevant_document": asymptotic_savings(
                relevant_only.pool, relevant_only.true_values
            ),
        },
    }
    report["savings"] = savings_table(report)
    report["runtime_seconds"] = time.perf_counter() - started
    return report


def _per_budget(budgets: np.ndarray, errors: np.ndarray, batch: QueryBatchResult, truth: float) -> list[dict]:
    covered = batch.covers(truth)
    return [
        {
            "budget": float(budget),
            "mae": summarise(errors[b]),
            "coverage": float(np.mean(covered[b])),
            "distinct_queries": float(np.mean(batch.n_judged[b])),
            "draws": float(np.mean(batch.n_draws[b])),
            "spent": float(np.mean(batch.spent[b])),
        }
        for b, budget in enumerate(budgets)
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", nargs="+", default=["S1"], help="LETOR subsets to fit on")
    parser.add_argument("--pool", nargs="+", default=["S4", "S5"], help="LETOR subsets forming the pool")
    parser.add_argument("--repetitions", type=int, default=5000)
    parser.add_argument("--budgets", type=float, nargs="+", default=list(BUDGETS))
    parser.add_argument("--seed", type=int, default=2013)
    parser.add_argument(
        "--drop-no-relevant", action="store_true", help="remove queries without relevant documents"
    )
    parser.add_argument("--output", default="mq2008", help="file stem under bench/results/")
    args = parser.parse_args(argv)
    report = run(args)
    RESULTS_DIR.mkdir(exist_ok=True)
    stem = RESULTS_DIR / args.output
    stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    write_markdown(report, stem.with_suffix(".md"))
    plot_results(report, stem.with_suffix(".png"))
    print(f"wrote {stem}.json, .md, .png in {report['runtime_seconds']:.0f}s")


if __name__ == "__main__":
    main()
