"""The sampling engine: which topics or documents to judge next so that DCG/ERR estimates of the
runs are unbiased and as precise as the budget allows, and the estimates themselves.

It turns a campaign's stored pool and judgments into the numeric core's arrays (`estimation`),
keeps the sampling state (label model, costs, q) and the draws with their propensities, stores
estimate snapshots, plans budgets and evaluates new runs on the stored draws. The modes that
sample (graded) use it through the names below; its modules are its own business (the layering
test holds every other package to this surface).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sampling.arrivals import (
        arrival_add,
        arrival_report,
        arrival_reports_refresh,
        arrival_summary,
        arrivals_json,
        arrivals_summaries,
        best_certified,
    )
    from sampling.dashboard import campaign_model_summary
    from sampling.draws import (
        budget_spent_emit,
        draws_top_up,
        queue_target,
        tasks_trim_to_budget,
    )
    from sampling.estimates import estimates_compute, estimates_current, snapshot_record
    from sampling.evaluation import evaluation_runs_import, run_evaluate
    from sampling.exports import (
        draws_csv,
        estimates_history,
        estimates_history_csv,
        estimates_history_json,
        pool_csv,
        sampling_csv,
    )
    from sampling.focus import compared_systems, goal_words
    from sampling.judge_calls import judge_run_done
    from sampling.judge_editing import judge_create, judge_settings_problems, judge_update
    from sampling.judge_kinds import (
        JudgeKind,
        JudgeSetting,
        judge_kind,
        judge_kind_choices,
        judge_kind_own_fields,
        judge_kinds_help,
        judge_setting_kinds,
        judge_settings_all,
        register_judge_kind,
    )
    from sampling.judge_labels import (
        judge_calibration_import,
        judge_choose_for_sampling,
        judge_labels_import,
    )
    from sampling.judge_reports import (
        judge_calls_csv,
        judge_labels_csv,
        judge_summary,
        judged_sample_csv,
        judges_dashboard,
        judges_json,
        judges_summaries,
        leaderboards,
    )
    from sampling.judge_runs import (
        StaleJudgeRunSweep,
        judge_run_active,
        judge_run_cancel,
        judge_run_latest,
        judge_run_progress,
        judge_run_start,
        judge_run_step,
        judge_runs_resume,
    )
    from sampling.label_model import item_cost_units
    from sampling.models import (
        EstimateSnapshot,
        Judge,
        JudgeCalibration,
        JudgeCall,
        JudgeLabel,
        JudgeRun,
        JudgeVersion,
        SamplingState,
    )
    from sampling.planning import campaign_plan
    from sampling.pool_arrays import pool_depth_of, pooled_systems
    from sampling.state import sampling_per_topic, sampling_state_recompute
    from sampling.strategies import (
        STRATEGIES,
        level_presentations,
        register_strategy,
        strategy_choices,
        strategy_for,
    )
    from sampling.verdicts import (
        VERDICT_SETTINGS,
        campaign_verdict_change_problem,
        campaign_verdict_sync,
        horizon_unit,
        plan_problem,
        verdict_events_emit,
        verdicts_update,
    )

# The names (the engine's tables among them) are imported on first use (PEP 562): `sampling` is
# also the Django app that holds those tables, and an app's package is imported before the models
# are ready.
_HOMES: dict[str, str] = {
    "EstimateSnapshot": "sampling.models",
    "Judge": "sampling.models",
    "JudgeCalibration": "sampling.models",
    "JudgeCall": "sampling.models",
    "JudgeLabel": "sampling.models",
    "JudgeRun": "sampling.models",
    "JudgeVersion": "sampling.models",
    "SamplingState": "sampling.models",
    "arrival_add": "sampling.arrivals",
    "arrival_report": "sampling.arrivals",
    "arrival_reports_refresh": "sampling.arrivals",
    "arrival_summary": "sampling.arrivals",
    "arrivals_json": "sampling.arrivals",
    "arrivals_summaries": "sampling.arrivals",
    "best_certified": "sampling.arrivals",
    "campaign_model_summary": "sampling.dashboard",
    "budget_spent_emit": "sampling.draws",
    "draws_top_up": "sampling.draws",
    "queue_target": "sampling.draws",
    "tasks_trim_to_budget": "sampling.draws",
    "estimates_compute": "sampling.estimates",
    "estimates_current": "sampling.estimates",
    "snapshot_record": "sampling.estimates",
    "evaluation_runs_import": "sampling.evaluation",
    "run_evaluate": "sampling.evaluation",
    "draws_csv": "sampling.exports",
    "estimates_history": "sampling.exports",
    "estimates_history_csv": "sampling.exports",
    "estimates_history_json": "sampling.exports",
    "pool_csv": "sampling.exports",
    "sampling_csv": "sampling.exports",
    "compared_systems": "sampling.focus",
    "goal_words": "sampling.focus",
    "judge_run_done": "sampling.judge_calls",
    "judge_create": "sampling.judge_editing",
    "judge_settings_problems": "sampling.judge_editing",
    "judge_update": "sampling.judge_editing",
    "JudgeKind": "sampling.judge_kinds",
    "JudgeSetting": "sampling.judge_kinds",
    "judge_settings_all": "sampling.judge_kinds",
    "judge_setting_kinds": "sampling.judge_kinds",
    "judge_kind": "sampling.judge_kinds",
    "judge_kind_choices": "sampling.judge_kinds",
    "judge_kind_own_fields": "sampling.judge_kinds",
    "judge_kinds_help": "sampling.judge_kinds",
    "register_judge_kind": "sampling.judge_kinds",
    "judge_calibration_import": "sampling.judge_labels",
    "judge_choose_for_sampling": "sampling.judge_labels",
    "judge_labels_import": "sampling.judge_labels",
    "judge_calls_csv": "sampling.judge_reports",
    "judge_labels_csv": "sampling.judge_reports",
    "judge_summary": "sampling.judge_reports",
    "judged_sample_csv": "sampling.judge_reports",
    "judges_dashboard": "sampling.judge_reports",
    "judges_json": "sampling.judge_reports",
    "judges_summaries": "sampling.judge_reports",
    "leaderboards": "sampling.judge_reports",
    "StaleJudgeRunSweep": "sampling.judge_runs",
    "judge_run_active": "sampling.judge_runs",
    "judge_run_cancel": "sampling.judge_runs",
    "judge_run_latest": "sampling.judge_runs",
    "judge_run_progress": "sampling.judge_runs",
    "judge_run_start": "sampling.judge_runs",
    "judge_run_step": "sampling.judge_runs",
    "judge_runs_resume": "sampling.judge_runs",
    "item_cost_units": "sampling.label_model",
    "campaign_plan": "sampling.planning",
    "pool_depth_of": "sampling.pool_arrays",
    "pooled_systems": "sampling.pool_arrays",
    "sampling_per_topic": "sampling.state",
    "sampling_state_recompute": "sampling.state",
    "STRATEGIES": "sampling.strategies",
    "level_presentations": "sampling.strategies",
    "register_strategy": "sampling.strategies",
    "strategy_choices": "sampling.strategies",
    "strategy_for": "sampling.strategies",
    "VERDICT_SETTINGS": "sampling.verdicts",
    "campaign_verdict_change_problem": "sampling.verdicts",
    "campaign_verdict_sync": "sampling.verdicts",
    "horizon_unit": "sampling.verdicts",
    "plan_problem": "sampling.verdicts",
    "verdict_events_emit": "sampling.verdicts",
    "verdicts_update": "sampling.verdicts",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sampling' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "EstimateSnapshot",
    "Judge",
    "JudgeCalibration",
    "JudgeCall",
    "JudgeLabel",
    "JudgeRun",
    "JudgeVersion",
    "SamplingState",
    "arrival_add",
    "arrival_report",
    "arrival_reports_refresh",
    "arrival_summary",
    "best_certified",
    "arrivals_json",
    "arrivals_summaries",
    "STRATEGIES",
    "campaign_model_summary",
    "compared_systems",
    "goal_words",
    "campaign_plan",
    "draws_csv",
    "pool_csv",
    "draws_top_up",
    "estimates_compute",
    "estimates_current",
    "estimates_history",
    "estimates_history_csv",
    "estimates_history_json",
    "evaluation_runs_import",
    "item_cost_units",
    "JudgeKind",
    "judge_calibration_import",
    "judge_choose_for_sampling",
    "judge_calls_csv",
    "judge_create",
    "judge_labels_csv",
    "judge_kind",
    "judge_kind_choices",
    "judge_kinds_help",
    "judge_labels_import",
    "judge_run_active",
    "judge_run_done",
    "judge_run_cancel",
    "judge_run_latest",
    "judge_run_progress",
    "judge_run_start",
    "judge_run_step",
    "StaleJudgeRunSweep",
    "judge_runs_resume",
    "judge_settings_problems",
    "judge_update",
    "judge_kind_own_fields",
    "JudgeSetting",
    "judge_settings_all",
    "judge_setting_kinds",
    "register_judge_kind",
    "judge_summary",
    "judged_sample_csv",
    "judges_dashboard",
    "judges_json",
    "judges_summaries",
    "leaderboards",
    "level_presentations",
    "pool_depth_of",
    "pooled_systems",
    "queue_target",
    "run_evaluate",
    "sampling_csv",
    "sampling_per_topic",
    "sampling_state_recompute",
    "snapshot_record",
    "register_strategy",
    "strategy_choices",
    "strategy_for",
    "tasks_trim_to_budget",
    "VERDICT_SETTINGS",
    "campaign_verdict_change_problem",
    "horizon_unit",
    "campaign_verdict_sync",
    "plan_problem",
    "verdict_events_emit",
    "verdicts_update",
    "budget_spent_emit",
]
