"""The numeric core: metrics, exact moments under a label model, sampling distributions,
unbiased estimators with confidence intervals, cost models and a budgeted simulator.

Pure Python + numpy/scipy; never imports Django (a test enforces it). Arrays and floats in,
frozen dataclasses out. The subpackages, in the order a campaign uses them:

- ``formats``: streaming readers for runs, qrels, label, cost, judge-label and LETOR files
  (errors name file and line).
- ``metrics``: ``Metric("DCG", 10)`` (``spec``); DCG, nDCG, ERR per query and per run
  (``values``); exact E[L], Var[L], Var[delta] under theta (``moments``, Sawade et al. 2013).
- ``label_models``: item features from the rankings; an ordinal label model theta fitted from
  judgments.
- ``sampling``: the pool, query-level q* (Sawade) and item-level Q* (Schnabel), draws, costs,
  the budget loop, unbiased estimators and their intervals, inclusion probabilities.
- ``judges``: model judges next to human assessors: calibration h(f), sigma(f), the judged
  design q and its unbiased estimate, agreement (kappa, weighted kappa, leniency).
- ``simulation``: the budgeted sampling loop against an oracle, batched; the planner that
  replays campaigns per strategy and budget (the judged design included).
- ``learned_dcg``: DCG gains and discounts learned from side-by-side preferences between lists
  (Zhou et al. 2014), SimpleMargin selection, simulated side-by-side answers.
- ``topk``: HeapSort top-k as a resumable state machine, merged orders, kappa metrics.
- ``training``: training-data selection (ELO-DCG, Long et al. 2010), the selection rules and
  their drawn variant; the bootstrap LightGBM ensemble (import ``estimation.training.ensembles``
  directly; it loads LightGBM).
- ``cli``: the command lines (``python -m estimation``).

The flat layout's module paths (``estimation.trec``, ``estimation.planner``, ...) still import
(``estimation._moved``).
"""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from typing import TYPE_CHECKING, Any

from estimation import _moved

if TYPE_CHECKING:
    from estimation.formats.letor import LetorPool, apply_labels, read_letor
    from estimation.formats.trec import InputFileError, Run, read_costs, read_labels, read_qrels, read_run
    from estimation.label_models.features import default_item_priors, label_feature_names, label_features
    from estimation.label_models.ordinal import OrdinalModel, default_prior, fit_ordinal_model, prior_model
    from estimation.metrics.moments import (
        difference_moments,
        err_cross_moment,
        leaderboard_second_moment,
        pool_difference_moments,
        pool_moments,
        ranking_moments,
    )
    from estimation.metrics.spec import Metric
    from estimation.metrics.values import (
        RunEvaluation,
        dcg,
        err,
        evaluate_run,
        metric_values,
        ndcg,
        summarize_run,
    )
    from estimation.sampling.arrivals import stratified_estimate, stratum_shares, topup_distribution
    from estimation.sampling.costs import CostModel, fit_cost_model, item_costs_from_lengths, query_costs
    from estimation.sampling.draws import (
        DrawBatch,
        draw_batch,
        pair_unit_items,
        seeded_draw,
        topic_unit_items,
    )
    from estimation.sampling.estimators import query_level_estimate, unreachable_mass
    from estimation.sampling.inclusion import horvitz_thompson_total, inclusion_probabilities
    from estimation.sampling.item_estimators import (
        ReuseEstimate,
        item_level_difference_estimate,
        item_level_estimate,
        item_level_weight_bound,
        reuse_estimate,
    )
    from estimation.sampling.items import expected_utility, item_sampling_distribution, system_weights
    from estimation.sampling.pool import Pool
    from estimation.sampling.pool_build import build_pool
    from estimation.sampling.queries import DEFAULT_MIX, optimal_query_distribution, passive_distribution
    from estimation.sampling.results import Estimate, Moments, SamplingDistribution
    from estimation.simulation.batch import simulate_item_level_batch, simulate_query_level_batch
    from estimation.simulation.loop import simulate_item_level, simulate_query_level
    from estimation.simulation.planner import PlannerRow, budget_needed, plan_budgets, prepare_replay
    from estimation.training.elo_dcg import (
        ExpectedLoss,
        expected_loss,
        expected_loss_documents,
        expected_loss_queries,
    )
    from estimation.training.selection import SELECTION_RULES, Selection, pool_expected_loss, select_training

# The public names, loaded on first use (PEP 562): `import estimation` (and so every
# ``python -m estimation`` command) then costs numpy at most, not scipy and the whole package;
# `evaluate` starts in a fraction of the time. `from estimation import Metric` works as before.
_PUBLIC_MODULES: dict[str, tuple[str, ...]] = {
    "estimation.formats.letor": ("LetorPool", "apply_labels", "read_letor"),
    "estimation.formats.trec": (
        "InputFileError",
        "Run",
        "read_costs",
        "read_labels",
        "read_qrels",
        "read_run",
    ),
    "estimation.label_models.features": ("default_item_priors", "label_feature_names", "label_features"),
    "estimation.label_models.ordinal": ("OrdinalModel", "default_prior", "fit_ordinal_model", "prior_model"),
    "estimation.metrics.moments": (
        "difference_moments",
        "err_cross_moment",
        "leaderboard_second_moment",
        "pool_difference_moments",
        "pool_moments",
        "ranking_moments",
    ),
    "estimation.metrics.spec": ("Metric",),
    "estimation.metrics.values": (
        "RunEvaluation",
        "dcg",
        "err",
        "evaluate_run",
        "metric_values",
        "ndcg",
        "summarize_run",
    ),
    "estimation.sampling.arrivals": ("stratified_estimate", "stratum_shares", "topup_distribution"),
    "estimation.sampling.costs": ("CostModel", "fit_cost_model", "item_costs_from_lengths", "query_costs"),
    "estimation.sampling.draws": (
        "DrawBatch",
        "draw_batch",
        "pair_unit_items",
        "seeded_draw",
        "topic_unit_items",
    ),
    "estimation.sampling.estimators": ("query_level_estimate", "unreachable_mass"),
    "estimation.sampling.inclusion": ("horvitz_thompson_total", "inclusion_probabilities"),
    "estimation.sampling.item_estimators": (
        "ReuseEstimate",
        "item_level_difference_estimate",
        "item_level_estimate",
        "item_level_weight_bound",
        "reuse_estimate",
    ),
    "estimation.sampling.items": ("expected_utility", "item_sampling_distribution", "system_weights"),
    "estimation.sampling.pool": ("Pool",),
    "estimation.sampling.pool_build": ("build_pool",),
    "estimation.sampling.queries": ("DEFAULT_MIX", "optimal_query_distribution", "passive_distribution"),
    "estimation.sampling.results": ("Estimate", "Moments", "SamplingDistribution"),
    "estimation.simulation.batch": ("simulate_item_level_batch", "simulate_query_level_batch"),
    "estimation.simulation.loop": ("simulate_item_level", "simulate_query_level"),
    "estimation.simulation.planner": ("PlannerRow", "budget_needed", "plan_budgets", "prepare_replay"),
    "estimation.training.elo_dcg": (
        "ExpectedLoss",
        "expected_loss",
        "expected_loss_documents",
        "expected_loss_queries",
    ),
    "estimation.training.selection": (
        "SELECTION_RULES",
        "Selection",
        "pool_expected_loss",
        "select_training",
    ),
}
_MODULE_OF = {name: module for module, names in _PUBLIC_MODULES.items() for name in names}


# Old public names: they still work, with a DeprecationWarning naming the new one.
_RENAMED = {"STRATEGIES": "SELECTION_RULES"}  # the training-selection rules (not sampling strategies)


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        warnings.warn(
            f"estimation.{name} is now estimation.{_RENAMED[name]}", DeprecationWarning, stacklevel=2
        )
        return __getattr__(_RENAMED[name])
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'estimation' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULE_OF})


_moved.install()  # the flat layout's module paths (estimation.trec, ...) keep working


class _Package(types.ModuleType):
    """The package's module type: a public name is never replaced by a module. Importing a flat
    layout's module path that shares a public name (``import estimation.label_features``) makes
    Python set the package's attribute to that module, which turned ``estimation.label_features``
    from the function into a module for the rest of the process."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _MODULE_OF and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "DEFAULT_MIX",
    "SELECTION_RULES",
    "CostModel",
    "DrawBatch",
    "Estimate",
    "ExpectedLoss",
    "InputFileError",
    "LetorPool",
    "Metric",
    "Moments",
    "OrdinalModel",
    "PlannerRow",
    "Pool",
    "ReuseEstimate",
    "Run",
    "RunEvaluation",
    "SamplingDistribution",
    "Selection",
    "apply_labels",
    "budget_needed",
    "build_pool",
    "dcg",
    "default_item_priors",
    "default_prior",
    "difference_moments",
    "draw_batch",
    "err",
    "err_cross_moment",
    "evaluate_run",
    "expected_loss",
    "expected_loss_documents",
    "expected_loss_queries",
    "expected_utility",
    "fit_cost_model",
    "fit_ordinal_model",
    "horvitz_thompson_total",
    "inclusion_probabilities",
    "item_costs_from_lengths",
    "item_level_difference_estimate",
    "item_level_estimate",
    "item_level_weight_bound",
    "item_sampling_distribution",
    "label_feature_names",
    "label_features",
    "leaderboard_second_moment",
    "metric_values",
    "ndcg",
    "optimal_query_distribution",
    "pair_unit_items",
    "passive_distribution",
    "plan_budgets",
    "pool_difference_moments",
    "pool_expected_loss",
    "pool_moments",
    "prepare_replay",
    "prior_model",
    "query_costs",
    "query_level_estimate",
    "ranking_moments",
    "read_costs",
    "read_labels",
    "read_letor",
    "read_qrels",
    "read_run",
    "reuse_estimate",
    "seeded_draw",
    "select_training",
    "simulate_item_level",
    "simulate_item_level_batch",
    "simulate_query_level",
    "simulate_query_level_batch",
    "stratified_estimate",
    "stratum_shares",
    "summarize_run",
    "system_weights",
    "topic_unit_items",
    "topup_distribution",
    "unreachable_mass",
]
